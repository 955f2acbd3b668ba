package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Content types of Raw documents.
const (
	ContentTypeJSON = "application/json"
	ContentTypeYAML = "application/yaml"
)

// Raw is a document as a user submitted it, kept so they can see exactly what they sent.
type Raw struct {
	ContentType string
	Data        []byte
}

// maxRetries bounds the optimistic-concurrency loops of writes without a precondition.
const maxRetries = 5

// Create stores a new object. It sets obj's resourceVersion (the etcd mod revision) and
// creationTimestamp (now, UTC). An empty raw stores the object's own JSON as its definition.
func (s *Store) Create(ctx context.Context, obj v4.Object, raw Raw) error {
	kind, meta := obj.GetKind(), obj.GetMeta()
	if err := checkObject(obj); err != nil {
		return fmt.Errorf("create %s: %w", kind, err)
	}
	key := objectKey(kind, meta.Namespace, meta.Name)
	created := time.Now().UTC().Truncate(time.Second)
	val, err := encodeObject(obj, created)
	if err != nil {
		return fmt.Errorf("create %s %s/%s: %w", kind, meta.Namespace, meta.Name, err)
	}
	if len(raw.Data) == 0 {
		raw = Raw{ContentType: ContentTypeJSON, Data: val}
	}
	ops := []clientv3.Op{s.putObject(kind, meta.Namespace, meta.Name, val), s.putRaw(kind, meta.Namespace, meta.Name, raw)}
	var deltas usageDeltas
	deltas.add(kind, meta.Namespace, 1, opBytes(ops...))
	for attempt := 0; ; attempt++ {
		u, err := s.planUsage(ctx, deltas)
		if err != nil {
			return fmt.Errorf("create %s %s/%s: %w", kind, meta.Namespace, meta.Name, err)
		}
		resp, err := s.client.Txn(ctx).
			If(append([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)}, u.cmps...)...).
			Then(append(ops, u.ops...)...).
			Else(clientv3.OpGet(key, clientv3.WithCountOnly())).
			Commit()
		if err != nil {
			s.usageFailed(u) // no answer: it may have committed, so the ledger is read again
			return fmt.Errorf("create %s %s/%s: %w", kind, meta.Namespace, meta.Name, wrapEtcd(err))
		}
		if resp.Succeeded {
			s.usageDone(u, resp.Header.Revision)
			meta.CreationTimestamp = created
			meta.ResourceVersion = formatRev(resp.Header.Revision)
			return nil
		}
		s.usageFailed(u)
		if resp.Responses[0].GetResponseRange().Count > 0 {
			return fmt.Errorf("create %s %s/%s: %w", kind, meta.Namespace, meta.Name, ErrAlreadyExists)
		}
		// Only the namespace's ledger moved: another write of the namespace went first.
		if err := usageWait(ctx, attempt); err != nil {
			return fmt.Errorf("create %s %s/%s: %w", kind, meta.Namespace, meta.Name, err)
		}
	}
}

// Get returns one object with its resourceVersion set.
func (s *Store) Get(ctx context.Context, kind v4.Kind, ns, name string) (v4.Object, error) {
	obj, _, err := s.get(ctx, kind, ns, name)
	if err != nil {
		return nil, fmt.Errorf("get %s %s/%s: %w", kind, ns, name, err)
	}
	return obj, nil
}

// GetLocal returns one object as this server's etcd member has applied it, without
// waiting for the cluster's latest writes to be applied (a serializable read): under a
// write burst a linearizable read waits for etcd to apply every entry committed before
// it. It may miss the latest writes: it serves checks that a transaction makes again on
// the version it replaces (RefuseControlled), so that they fail early in the common case.
func (s *Store) GetLocal(ctx context.Context, kind v4.Kind, ns, name string) (v4.Object, error) {
	obj, _, err := s.get(ctx, kind, ns, name, clientv3.WithSerializable())
	if err != nil {
		return nil, fmt.Errorf("get %s %s/%s: %w", kind, ns, name, err)
	}
	return obj, nil
}

// get returns the object and its mod revision (0 and ErrNotFound when absent).
func (s *Store) get(ctx context.Context, kind v4.Kind, ns, name string, opts ...clientv3.OpOption) (v4.Object, int64, error) {
	if err := checkKey(kind, ns, name); err != nil {
		return nil, 0, err
	}
	if name == "" { // checkKey allows it for List; one object needs its name
		return nil, 0, fmt.Errorf("%w: name is empty", ErrInvalid)
	}
	resp, err := s.client.Get(ctx, objectKey(kind, ns, name), opts...)
	if err != nil {
		return nil, 0, wrapEtcd(err)
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, ErrNotFound
	}
	obj, err := s.decodeObject(kind, resp.Kvs[0])
	if err != nil {
		return nil, 0, err
	}
	return obj, resp.Kvs[0].ModRevision, nil
}

// GetRaw returns the document as last submitted for the object.
func (s *Store) GetRaw(ctx context.Context, kind v4.Kind, ns, name string) (Raw, error) {
	if err := checkKey(kind, ns, name); err != nil {
		return Raw{}, fmt.Errorf("get definition of %s %s/%s: %w", kind, ns, name, err)
	}
	resp, err := s.client.Get(ctx, rawKey(kind, ns, name))
	if err != nil {
		return Raw{}, fmt.Errorf("get definition of %s %s/%s: %w", kind, ns, name, wrapEtcd(err))
	}
	if len(resp.Kvs) == 0 {
		return Raw{}, fmt.Errorf("get definition of %s %s/%s: %w", kind, ns, name, ErrNotFound)
	}
	val, err := s.openValue(resp.Kvs[0].Key, resp.Kvs[0].Value)
	if err != nil {
		return Raw{}, fmt.Errorf("get definition of %s %s/%s: %w", kind, ns, name, err)
	}
	return decodeRaw(val), nil
}

// List returns the objects of a kind in namespace ns ("" for all namespaces), sorted by
// namespace then name, and the etcd revision of the read (a watch can start from it).
func (s *Store) List(ctx context.Context, kind v4.Kind, ns string) ([]v4.Object, int64, error) {
	if err := checkKey(kind, ns, ""); err != nil {
		return nil, 0, fmt.Errorf("list %s in %q: %w", kind, ns, err)
	}
	resp, err := s.client.Get(ctx, objectPrefix(kind, ns), clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("list %s in %q: %w", kind, ns, wrapEtcd(err))
	}
	objs, err := s.decodeAll(kind, resp.Kvs)
	if err != nil {
		return nil, 0, fmt.Errorf("list %s in %q: %w", kind, ns, err)
	}
	return objs, resp.Header.Revision, nil
}

// decodeAll decodes kvs and sorts them by namespace then name (key order differs, since
// "-" sorts before "/").
func (s *Store) decodeAll(kind v4.Kind, kvs []*mvccpb.KeyValue) ([]v4.Object, error) {
	objs := make([]v4.Object, 0, len(kvs))
	for _, kv := range kvs {
		obj, err := s.decodeObject(kind, kv)
		if err != nil {
			return nil, err
		}
		objs = append(objs, obj)
	}
	slices.SortFunc(objs, func(a, b v4.Object) int {
		am, bm := a.GetMeta(), b.GetMeta()
		return cmp.Or(cmp.Compare(am.Namespace, bm.Namespace), cmp.Compare(am.Name, bm.Name))
	})
	return objs, nil
}

// Update replaces a stored object. A non-empty obj resourceVersion must equal the stored
// mod revision (else ErrConflict); without one the last writer wins. creationTimestamp is
// kept from the stored object. An empty raw keeps the stored definition.
func (s *Store) Update(ctx context.Context, obj v4.Object, raw Raw) error {
	return s.update(ctx, obj, raw)
}

// update is Update, with more conditions the write needs (all must hold, else
// ErrConflict when a version was given, else a retry).
func (s *Store) update(ctx context.Context, obj v4.Object, raw Raw, conds ...clientv3.Cmp) error {
	kind, meta := obj.GetKind(), obj.GetMeta()
	if err := checkObject(obj); err != nil {
		return fmt.Errorf("update %s: %w", kind, err)
	}
	ns, name := meta.Namespace, meta.Name
	want, err := parseRev(meta.ResourceVersion)
	if err != nil {
		return fmt.Errorf("update %s %s/%s: %w", kind, ns, name, err)
	}
	key := objectKey(kind, ns, name)
	retries := writeRetries(kind)
	for attempt := range retries {
		cur, curRev, size, err := s.getWanted(ctx, kind, ns, name, want)
		if err != nil {
			return fmt.Errorf("update %s %s/%s: %w", kind, ns, name, err)
		}
		created := cur.GetMeta().CreationTimestamp
		v4.CarryStatus(obj, cur)
		val, err := encodeObject(obj, created)
		if err != nil {
			return fmt.Errorf("update %s %s/%s: %w", kind, ns, name, err)
		}
		ops := []clientv3.Op{s.putObject(kind, ns, name, val)}
		grown := opBytes(ops[0]) - size.object
		if len(raw.Data) > 0 {
			ops = append(ops, s.putRaw(kind, ns, name, raw))
			grown += opBytes(ops[1]) - size.raw
		}
		var deltas usageDeltas
		deltas.add(kind, ns, 0, grown)
		u, err := s.planUsage(ctx, deltas)
		if err != nil {
			return fmt.Errorf("update %s %s/%s: %w", kind, ns, name, err)
		}
		resp, err := s.client.Txn(ctx).
			If(append(append([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", curRev)}, conds...), u.cmps...)...).
			Then(append(ops, u.ops...)...).Commit()
		if err != nil {
			s.usageFailed(u) // no answer: it may have committed, so the ledger is read again
			return fmt.Errorf("update %s %s/%s: %w", kind, ns, name, wrapEtcd(err))
		}
		if resp.Succeeded {
			s.usageDone(u, resp.Header.Revision)
			meta.CreationTimestamp = created
			meta.ResourceVersion = formatRev(resp.Header.Revision)
			return nil
		}
		if err := s.lostWrite(ctx, u, want, attempt); err != nil {
			return fmt.Errorf("update %s %s/%s: %w", kind, ns, name, err)
		}
	}
	return fmt.Errorf("update %s %s/%s: %w (gave up after %d concurrent writes)", kind, ns, name, ErrConflict, retries)
}

// Delete removes an object and its definition and returns its last state. A non-empty
// resourceVersion is a precondition (ErrConflict when stale).
func (s *Store) Delete(ctx context.Context, kind v4.Kind, ns, name, resourceVersion string) (v4.Object, error) {
	obj, _, err := s.DeleteAt(ctx, kind, ns, name, resourceVersion)
	return obj, err
}

// DeleteAt is Delete that also returns the revision of the delete, which a reader of a
// cache waits for before it reads again (a controller must not find what it just deleted).
func (s *Store) DeleteAt(ctx context.Context, kind v4.Kind, ns, name, resourceVersion string) (v4.Object, int64, error) {
	want, err := parseRev(resourceVersion)
	if err != nil {
		return nil, 0, fmt.Errorf("delete %s %s/%s: %w", kind, ns, name, err)
	}
	key := objectKey(kind, ns, name)
	retries := writeRetries(kind)
	for attempt := range retries {
		cur, curRev, size, err := s.getWanted(ctx, kind, ns, name, want)
		if err != nil {
			return nil, 0, fmt.Errorf("delete %s %s/%s: %w", kind, ns, name, err)
		}
		var deltas usageDeltas
		deltas.add(kind, ns, -1, -size.object-size.raw)
		u, err := s.planUsage(ctx, deltas)
		if err != nil {
			return nil, 0, fmt.Errorf("delete %s %s/%s: %w", kind, ns, name, err)
		}
		ops := []clientv3.Op{clientv3.OpDelete(key), clientv3.OpDelete(rawKey(kind, ns, name))}
		resp, err := s.client.Txn(ctx).
			If(append([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", curRev)}, u.cmps...)...).
			Then(append(ops, u.ops...)...).
			Commit()
		if errors.Is(wrapEtcd(err), ErrNoSpace) && len(u.ops) > 0 {
			// etcd's NOSPACE alarm refuses any transaction that puts, the ledger's too, and
			// deletes must still free space: delete the ledger with the object, and the
			// namespace's next write counts what it holds.
			s.usageFailed(u)
			resp, err = s.client.Txn(ctx).
				If(clientv3.Compare(clientv3.ModRevision(key), "=", curRev)).
				Then(append(ops, clientv3.OpDelete(usageKey(ns)))...).
				Commit()
			u = &usageWrite{}
		}
		if err != nil {
			s.usageFailed(u) // no answer: it may have committed, so the ledger is read again
			return nil, 0, fmt.Errorf("delete %s %s/%s: %w", kind, ns, name, wrapEtcd(err))
		}
		if resp.Succeeded {
			s.usageDone(u, resp.Header.Revision)
			return cur, resp.Header.Revision, nil
		}
		if err := s.lostWrite(ctx, u, want, attempt); err != nil {
			return nil, 0, fmt.Errorf("delete %s %s/%s: %w", kind, ns, name, err)
		}
	}
	return nil, 0, fmt.Errorf("delete %s %s/%s: %w (gave up after %d concurrent writes)", kind, ns, name, ErrConflict, retries)
}

// Count returns how many objects of a kind are stored (all namespaces), reading no values.
func (s *Store) Count(ctx context.Context, kind v4.Kind) (int64, error) {
	resp, err := s.client.Get(ctx, objectPrefix(kind, ""), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("count %s: %w", kind, wrapEtcd(err))
	}
	return resp.Count, nil
}

// Revision returns etcd's current revision, read through a quorum: a cache that has
// reached it reflects every write that completed before the call (a consistent read from
// a cache, as the Kubernetes API server's).
func (s *Store) Revision(ctx context.Context) (int64, error) {
	resp, err := s.client.Get(ctx, objectPrefix(v4.KindNode, "")+"\x00revision", clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("read the current revision: %w", wrapEtcd(err))
	}
	return resp.Header.Revision, nil
}
