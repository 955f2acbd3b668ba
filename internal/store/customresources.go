package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/berthhq/berth/internal/customres"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Custom resource definitions and custom resources (docs/api.md, "Custom resources") are
// documents of their own, outside api/v4's kinds:
//
//	/berth/v1/crds/{plural.group}                         a definition
//	/berth/v1/customresources/{plural.group}/{ns}/{name}  a resource of that definition
//
// Names are DNS labels and definition names DNS subdomains (internal/customres), so keys
// never hold a "/" of their own. A resource counts in its namespace's ledger (objects and
// bytes, quota_ledger.go) like an object, so the namespace's limits bound how many it
// holds. A resource is created only while its definition exists, and a definition is
// deleted only while it has no resources: both are conditions of the write's transaction,
// so no race leaves a resource without its definition.
const (
	crdPrefix = prefix + "crds/"
	crPrefix  = prefix + "customresources/"
)

func crdKey(name string) string { return crdPrefix + name }

func crKey(crd, ns, name string) string { return crPrefix + crd + "/" + ns + "/" + name }

// crRange is the range of one definition's resources, in namespace ns or in all ("").
func crRange(crd, ns string) string {
	if ns == "" {
		return crPrefix + crd + "/"
	}
	return crPrefix + crd + "/" + ns + "/"
}

// StoredDoc is a stored definition or resource: its value and mod revision.
type StoredDoc struct {
	Namespace, Name string
	Value           []byte
	Rev             int64
}

func checkCRKeys(crd, ns, name string) error {
	if err := customres.CheckDefinitionName(crd); err != nil {
		return fmt.Errorf("%w: custom resource definition %v", ErrInvalid, err)
	}
	if err := checkName("namespace", ns); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if name != "" {
		if err := customres.CheckName("name", name); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
	return nil
}

// CreateDefinition stores a new definition; the cluster holds at most
// customres.MaxDefinitions.
func (s *Store) CreateDefinition(ctx context.Context, name string, val []byte) (int64, error) {
	if err := customres.CheckDefinitionName(name); err != nil {
		return 0, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	count, err := s.client.Get(ctx, crdPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("count custom resource definitions: %w", wrapEtcd(err))
	}
	if count.Count >= customres.MaxDefinitions {
		return 0, fmt.Errorf("%w: the cluster holds %d custom resource definitions, the most it keeps: delete some first", ErrInvalid, count.Count)
	}
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(crdKey(name)), "=", 0)).
		Then(clientv3.OpPut(crdKey(name), string(val))).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("create custom resource definition %s: %w", name, wrapEtcd(err))
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("custom resource definition %s: %w", name, ErrAlreadyExists)
	}
	return resp.Header.Revision, nil
}

// Definition reads one definition.
func (s *Store) Definition(ctx context.Context, name string) (StoredDoc, error) {
	if customres.CheckDefinitionName(name) != nil {
		return StoredDoc{}, fmt.Errorf("custom resource definition %q: %w", name, ErrNotFound)
	}
	resp, err := s.client.Get(ctx, crdKey(name))
	if err != nil {
		return StoredDoc{}, fmt.Errorf("read custom resource definition %s: %w", name, wrapEtcd(err))
	}
	if len(resp.Kvs) == 0 {
		return StoredDoc{}, fmt.Errorf("custom resource definition %s: %w", name, ErrNotFound)
	}
	return StoredDoc{Name: name, Value: resp.Kvs[0].Value, Rev: resp.Kvs[0].ModRevision}, nil
}

// Definitions lists every definition by name.
func (s *Store) Definitions(ctx context.Context) ([]StoredDoc, error) {
	resp, err := s.client.Get(ctx, crdPrefix, clientv3.WithPrefix(), clientv3.WithLimit(2*customres.MaxDefinitions))
	if err != nil {
		return nil, fmt.Errorf("list custom resource definitions: %w", wrapEtcd(err))
	}
	out := make([]StoredDoc, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out = append(out, StoredDoc{Name: string(kv.Key[len(crdPrefix):]), Value: kv.Value, Rev: kv.ModRevision})
	}
	return out, nil
}

// UpdateDefinition replaces a definition; rev, when not 0, must be its mod revision.
func (s *Store) UpdateDefinition(ctx context.Context, name string, val []byte, rev int64) (int64, error) {
	if customres.CheckDefinitionName(name) != nil {
		return 0, fmt.Errorf("custom resource definition %q: %w", name, ErrNotFound)
	}
	cmp := clientv3.Compare(clientv3.CreateRevision(crdKey(name)), ">", 0)
	if rev != 0 {
		cmp = clientv3.Compare(clientv3.ModRevision(crdKey(name)), "=", rev)
	}
	resp, err := s.client.Txn(ctx).If(cmp).
		Then(clientv3.OpPut(crdKey(name), string(val))).
		Else(clientv3.OpGet(crdKey(name), clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("update custom resource definition %s: %w", name, wrapEtcd(err))
	}
	if !resp.Succeeded {
		return 0, missingOr(resp, "custom resource definition "+name)
	}
	return resp.Header.Revision, nil
}

// missingOr is the error of a failed conditional write: the key is gone, or it changed.
func missingOr(resp *clientv3.TxnResponse, what string) error {
	if resp.Responses[0].GetResponseRange().Count == 0 {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return fmt.Errorf("%s: %w", what, ErrConflict)
}

// ErrDefinitionInUse refuses to delete a definition that still has resources (HTTP 409).
var ErrDefinitionInUse = fmt.Errorf("%w: the definition still has custom resources: delete them first", ErrConflict)

// DeleteDefinition deletes a definition that has no resources left; rev, when not 0, must
// be its mod revision. It returns what was stored.
func (s *Store) DeleteDefinition(ctx context.Context, name string, rev int64) (StoredDoc, error) {
	cur, err := s.Definition(ctx, name)
	if err != nil {
		return StoredDoc{}, err
	}
	if rev != 0 && rev != cur.Rev {
		return StoredDoc{}, fmt.Errorf("custom resource definition %s: %w", name, ErrConflict)
	}
	// No key in the range of its resources: an empty range compares as one zero key.
	none := clientv3.Compare(clientv3.CreateRevision(crRange(name, "")), "=", 0).WithPrefix()
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(crdKey(name)), "=", cur.Rev), none).
		Then(clientv3.OpDelete(crdKey(name))).
		Else(clientv3.OpGet(crdKey(name), clientv3.WithCountOnly()), clientv3.OpGet(crRange(name, ""), clientv3.WithPrefix(), clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return StoredDoc{}, fmt.Errorf("delete custom resource definition %s: %w", name, wrapEtcd(err))
	}
	if !resp.Succeeded {
		if n := resp.Responses[1].GetResponseRange().Count; n > 0 {
			return StoredDoc{}, fmt.Errorf("custom resource definition %s holds %d resources: %w", name, n, ErrDefinitionInUse)
		}
		return StoredDoc{}, missingOr(resp, "custom resource definition "+name)
	}
	return cur, nil
}

// CreateCustomResource stores a new resource of definition crd, counted in its
// namespace's ledger; the definition must exist when it is written.
func (s *Store) CreateCustomResource(ctx context.Context, crd, ns, name string, val []byte) (int64, error) {
	if err := checkCRKeys(crd, ns, name); err != nil {
		return 0, err
	}
	key := crKey(crd, ns, name)
	deltas := usageDeltas{ns: {Objects: 1, Bytes: int64(len(val))}}
	for attempt := 0; ; attempt++ {
		u, err := s.planUsage(ctx, deltas)
		if err != nil {
			return 0, fmt.Errorf("create %s %s/%s: %w", crd, ns, name, err)
		}
		cmps := append([]clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(key), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(crdKey(crd)), ">", 0),
		}, u.cmps...)
		resp, err := s.client.Txn(ctx).If(cmps...).
			Then(append([]clientv3.Op{clientv3.OpPut(key, string(val))}, u.ops...)...).
			Else(clientv3.OpGet(key, clientv3.WithCountOnly()), clientv3.OpGet(crdKey(crd), clientv3.WithCountOnly())).
			Commit()
		if err != nil {
			s.usageFailed(u) // no answer: it may have committed, so the ledger is read again
			return 0, fmt.Errorf("create %s %s/%s: %w", crd, ns, name, wrapEtcd(err))
		}
		if resp.Succeeded {
			s.usageDone(u, resp.Header.Revision)
			return resp.Header.Revision, nil
		}
		s.usageFailed(u)
		if resp.Responses[0].GetResponseRange().Count > 0 {
			return 0, fmt.Errorf("%s %s/%s: %w", crd, ns, name, ErrAlreadyExists)
		}
		if resp.Responses[1].GetResponseRange().Count == 0 {
			return 0, fmt.Errorf("custom resource definition %s: %w", crd, ErrNotFound)
		}
		if err := usageWait(ctx, attempt); err != nil {
			return 0, fmt.Errorf("create %s %s/%s: %w", crd, ns, name, err)
		}
	}
}

// CustomResource reads one resource.
func (s *Store) CustomResource(ctx context.Context, crd, ns, name string) (StoredDoc, error) {
	if checkCRKeys(crd, ns, name) != nil || name == "" {
		return StoredDoc{}, fmt.Errorf("%s %s/%s: %w", crd, ns, name, ErrNotFound)
	}
	resp, err := s.client.Get(ctx, crKey(crd, ns, name))
	if err != nil {
		return StoredDoc{}, fmt.Errorf("read %s %s/%s: %w", crd, ns, name, wrapEtcd(err))
	}
	if len(resp.Kvs) == 0 {
		return StoredDoc{}, fmt.Errorf("%s %s/%s: %w", crd, ns, name, ErrNotFound)
	}
	return StoredDoc{Namespace: ns, Name: name, Value: resp.Kvs[0].Value, Rev: resp.Kvs[0].ModRevision}, nil
}

// CustomResourcesEach calls fn with each resource of crd in namespace ns, or in every
// namespace for "", by namespace and name, as of one revision, a chunk at a time
// (ListEach): start is called once with that revision first. A list of any size is read
// in bounded memory.
func (s *Store) CustomResourcesEach(ctx context.Context, crd, ns string, start func(rev int64) error, fn func(StoredDoc) error) error {
	if err := customres.CheckDefinitionName(crd); err != nil {
		return fmt.Errorf("%w: custom resource definition %v", ErrInvalid, err)
	}
	all := crRange(crd, "")
	return s.eachKV(ctx, crRange(crd, ns), crd, start, func(kv *mvccpb.KeyValue) error {
		nsOf, name, _ := strings.Cut(string(kv.Key[len(all):]), "/")
		return fn(StoredDoc{Namespace: nsOf, Name: name, Value: kv.Value, Rev: kv.ModRevision})
	})
}

// UpdateCustomResource replaces a resource with what replace makes of the stored value
// (called again when the write lost a race); rev, when not 0, must be its mod revision.
// It returns what it stored; an error of replace is returned as it is.
func (s *Store) UpdateCustomResource(ctx context.Context, crd, ns, name string, rev int64, replace func(stored []byte) ([]byte, error)) (StoredDoc, error) {
	for attempt := range usageRetries {
		cur, err := s.CustomResource(ctx, crd, ns, name)
		if err != nil {
			return StoredDoc{}, err
		}
		if rev != 0 && rev != cur.Rev {
			return StoredDoc{}, fmt.Errorf("%s %s/%s: %w", crd, ns, name, ErrConflict)
		}
		val, err := replace(cur.Value)
		if err != nil {
			return StoredDoc{}, err
		}
		key := crKey(crd, ns, name)
		deltas := usageDeltas{}
		if d := int64(len(val) - len(cur.Value)); d != 0 {
			deltas[ns] = NamespaceUsage{Bytes: d}
		}
		u, err := s.planUsage(ctx, deltas)
		if err != nil {
			return StoredDoc{}, fmt.Errorf("update %s %s/%s: %w", crd, ns, name, err)
		}
		resp, err := s.client.Txn(ctx).
			If(append([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", cur.Rev)}, u.cmps...)...).
			Then(append([]clientv3.Op{clientv3.OpPut(key, string(val))}, u.ops...)...).
			Commit()
		if err != nil {
			s.usageFailed(u) // no answer: it may have committed, so the ledger is read again
			return StoredDoc{}, fmt.Errorf("update %s %s/%s: %w", crd, ns, name, wrapEtcd(err))
		}
		if resp.Succeeded {
			s.usageDone(u, resp.Header.Revision)
			return StoredDoc{Namespace: ns, Name: name, Value: val, Rev: resp.Header.Revision}, nil
		}
		if err := s.lostWrite(ctx, u, rev, attempt); err != nil {
			return StoredDoc{}, fmt.Errorf("update %s %s/%s: %w", crd, ns, name, err)
		}
	}
	return StoredDoc{}, fmt.Errorf("update %s %s/%s: %w (gave up after %d concurrent writes)", crd, ns, name, ErrConflict, usageRetries)
}

// DeleteCustomResource deletes a resource; rev, when not 0, must be its mod revision. It
// returns what was stored.
func (s *Store) DeleteCustomResource(ctx context.Context, crd, ns, name string, rev int64) (StoredDoc, error) {
	for attempt := range usageRetries {
		cur, err := s.CustomResource(ctx, crd, ns, name)
		if err != nil {
			return StoredDoc{}, err
		}
		if rev != 0 && rev != cur.Rev {
			return StoredDoc{}, fmt.Errorf("%s %s/%s: %w", crd, ns, name, ErrConflict)
		}
		key := crKey(crd, ns, name)
		u, err := s.planUsage(ctx, usageDeltas{ns: {Objects: -1, Bytes: -int64(len(cur.Value))}})
		if err != nil {
			return StoredDoc{}, fmt.Errorf("delete %s %s/%s: %w", crd, ns, name, err)
		}
		resp, err := s.client.Txn(ctx).
			If(append([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", cur.Rev)}, u.cmps...)...).
			Then(append([]clientv3.Op{clientv3.OpDelete(key)}, u.ops...)...).
			Commit()
		if err != nil {
			s.usageFailed(u) // no answer: it may have committed, so the ledger is read again
			return StoredDoc{}, fmt.Errorf("delete %s %s/%s: %w", crd, ns, name, wrapEtcd(err))
		}
		if resp.Succeeded {
			s.usageDone(u, resp.Header.Revision)
			return cur, nil
		}
		if err := s.lostWrite(ctx, u, rev, attempt); err != nil {
			return StoredDoc{}, fmt.Errorf("delete %s %s/%s: %w", crd, ns, name, err)
		}
	}
	return StoredDoc{}, fmt.Errorf("delete %s %s/%s: %w (gave up after %d concurrent writes)", crd, ns, name, ErrConflict, usageRetries)
}

// customResourceUsage is what namespace ns holds of custom resources at rev, for a
// recount of its ledger.
func (s *Store) customResourceUsage(ctx context.Context, ns string, rev int64) (NamespaceUsage, error) {
	var u NamespaceUsage
	resp, err := s.client.Get(ctx, crdPrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithRev(rev))
	if err != nil {
		return u, wrapEtcd(err)
	}
	for _, kv := range resp.Kvs {
		n, size, err := s.sizeRange(ctx, crRange(string(kv.Key[len(crdPrefix):]), ns), rev)
		if err != nil {
			return u, err
		}
		u.Objects += n
		u.Bytes += size
	}
	return u, nil
}
