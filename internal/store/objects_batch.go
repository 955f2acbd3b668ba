package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	v4 "github.com/berthhq/berth/api/v4"
)

// How many objects one CreateAll transaction writes, two puts each (the object and its
// definition): the embedded member allows 4,096 operations per transaction, and its 10 MiB
// request limit holds 500 task groups easily; an external cluster has etcd's default of
// 128 operations.
const (
	createBatch         = 500
	createBatchExternal = 60
)

// CreateAll stores new objects as Create does, many in one transaction (one raft entry and
// one fsync instead of one each): the controllers place hundreds of instances in one pass.
// Each object's definition is its own JSON. When an object of a batch already exists, the
// batch's objects are created one by one, so the others are still written; the error then
// names every object that could not be. created reports, per object, whether it was
// written (its resourceVersion and creationTimestamp are set).
func (s *Store) CreateAll(ctx context.Context, objs []v4.Object) (created []bool, err error) {
	created = make([]bool, len(objs))
	batch := createBatch
	if s.etcd == nil {
		batch = createBatchExternal
	}
	var errs []error
	for start := 0; start < len(objs); start += batch {
		end := min(start+batch, len(objs))
		if err := s.createBatch(ctx, objs[start:end], created[start:end]); err != nil {
			errs = append(errs, err)
		}
	}
	return created, errors.Join(errs...)
}

func (s *Store) createBatch(ctx context.Context, objs []v4.Object, created []bool) error {
	now := time.Now().UTC().Truncate(time.Second)
	cmps := make([]clientv3.Cmp, 0, len(objs))
	ops := make([]clientv3.Op, 0, 2*len(objs))
	var deltas usageDeltas
	for _, obj := range objs {
		kind, meta := obj.GetKind(), obj.GetMeta()
		if err := checkObject(obj); err != nil {
			return fmt.Errorf("create %s: %w", kind, err)
		}
		val, err := encodeObject(obj, now)
		if err != nil {
			return fmt.Errorf("create %s %s/%s: %w", kind, meta.Namespace, meta.Name, err)
		}
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(objectKey(kind, meta.Namespace, meta.Name)), "=", 0))
		put := []clientv3.Op{s.putObject(kind, meta.Namespace, meta.Name, val),
			s.putRaw(kind, meta.Namespace, meta.Name, Raw{ContentType: ContentTypeJSON, Data: val})}
		deltas.add(kind, meta.Namespace, 1, opBytes(put...))
		ops = append(ops, put...)
	}
	for attempt := 0; ; attempt++ {
		u, err := s.planUsage(ctx, deltas)
		if err != nil {
			return fmt.Errorf("create %d objects: %w", len(objs), err)
		}
		resp, err := s.client.Txn(ctx).If(append(cmps, u.cmps...)...).Then(append(ops, u.ops...)...).
			Else(keysOf(objs, len(u.cmps) > 0)...).Commit()
		if err != nil {
			s.usageFailed(u) // no answer: it may have committed, so the ledger is read again
			return fmt.Errorf("create %d objects: %w", len(objs), wrapEtcd(err))
		}
		if resp.Succeeded {
			s.usageDone(u, resp.Header.Revision)
			for i, obj := range objs {
				meta := obj.GetMeta()
				meta.CreationTimestamp = now
				meta.ResourceVersion = formatRev(resp.Header.Revision)
				created[i] = true
			}
			return nil
		}
		s.usageFailed(u)
		if len(u.cmps) == 0 || slices.ContainsFunc(resp.Responses, func(r *pb.ResponseOp) bool { return len(r.GetResponseRange().Kvs) > 0 }) {
			return s.createEach(ctx, objs, created) // one exists: each on its own
		}
		// Only a namespace's ledger moved (quota_ledger.go): the batch is tried again.
		if err := usageWait(ctx, attempt); err != nil {
			return fmt.Errorf("create %d objects: %w", len(objs), err)
		}
	}
}

// createEach creates objs one by one, so that one that exists or is refused leaves the
// others written.
func (s *Store) createEach(ctx context.Context, objs []v4.Object, created []bool) error {
	var errs []error
	for i, obj := range objs {
		if err := s.Create(ctx, obj, Raw{}); err != nil {
			errs = append(errs, err)
			continue
		}
		created[i] = true
	}
	return errors.Join(errs...)
}

// keysOf reads the keys (and mod revisions) of objs, for the Else branch of a batch that
// must tell a changed object from a changed ledger; none when it need not.
func keysOf(objs []v4.Object, need bool) []clientv3.Op {
	if !need {
		return nil
	}
	ops := make([]clientv3.Op, len(objs))
	for i, obj := range objs {
		m := obj.GetMeta()
		ops[i] = clientv3.OpGet(objectKey(obj.GetKind(), m.Namespace, m.Name), clientv3.WithKeysOnly())
	}
	return ops
}

// How many objects one UpdateAll transaction writes (one put and one compare each).
const (
	updateBatch         = 1000
	updateBatchExternal = 120
)

// UpdateAll writes objects that each carry the resourceVersion they were read at, many in
// one transaction, as the server's batched status writes need: a transaction writes its
// objects only if none of them changed since (no status is carried over, no definition
// is written). updated reports, per object, whether it was written (its resourceVersion is
// then the transaction's); a batch in which one object changed, or is gone, is written not
// at all, and the caller writes those objects one by one. err is a failure of etcd.
func (s *Store) UpdateAll(ctx context.Context, objs []v4.Object) (updated []bool, err error) {
	updated = make([]bool, len(objs))
	batch := updateBatch
	if s.etcd == nil {
		batch = updateBatchExternal
	}
	for start := 0; start < len(objs); start += batch {
		end := min(start+batch, len(objs))
		if err := s.updateBatch(ctx, objs[start:end], updated[start:end]); err != nil {
			return updated, err
		}
	}
	return updated, nil
}

func (s *Store) updateBatch(ctx context.Context, objs []v4.Object, updated []bool) error {
	cmps := make([]clientv3.Cmp, 0, len(objs))
	ops := make([]clientv3.Op, 0, len(objs))
	revs := make([]int64, len(objs))
	for i, obj := range objs {
		kind, meta := obj.GetKind(), obj.GetMeta()
		if err := checkObject(obj); err != nil {
			return fmt.Errorf("update %s: %w", kind, err)
		}
		rev, err := parseRev(meta.ResourceVersion)
		if err != nil || rev == 0 {
			return fmt.Errorf("update %s %s/%s: %w: a batched update needs the resourceVersion read", kind, meta.Namespace, meta.Name, ErrInvalid)
		}
		val, err := encodeObject(obj, meta.CreationTimestamp)
		if err != nil {
			return fmt.Errorf("update %s %s/%s: %w", kind, meta.Namespace, meta.Name, err)
		}
		revs[i] = rev
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(objectKey(kind, meta.Namespace, meta.Name)), "=", rev))
		ops = append(ops, s.putObject(kind, meta.Namespace, meta.Name, val))
	}
	deltas, current, err := s.batchDeltas(ctx, objs, ops, revs)
	if err != nil || !current {
		return err // an object changed since it was read: the caller writes it alone
	}
	for attempt := 0; ; attempt++ {
		u, err := s.planUsage(ctx, deltas)
		if err != nil {
			return fmt.Errorf("update %d objects: %w", len(objs), err)
		}
		resp, err := s.client.Txn(ctx).If(append(cmps, u.cmps...)...).Then(append(ops, u.ops...)...).
			Else(keysOf(objs, len(u.cmps) > 0)...).Commit()
		if err != nil {
			s.usageFailed(u) // no answer: it may have committed, so the ledger is read again
			return fmt.Errorf("update %d objects: %w", len(objs), wrapEtcd(err))
		}
		if resp.Succeeded {
			s.usageDone(u, resp.Header.Revision)
			for i, obj := range objs {
				obj.GetMeta().ResourceVersion = formatRev(resp.Header.Revision)
				updated[i] = true
			}
			return nil
		}
		s.usageFailed(u)
		if len(u.cmps) == 0 || changed(resp.Responses, revs) {
			return nil
		}
		if err := usageWait(ctx, attempt); err != nil {
			return fmt.Errorf("update %d objects: %w", len(objs), err)
		}
	}
}

// batchDeltas reads the stored sizes of the counted objects of an UpdateAll batch (which
// writes no definitions) and returns what the batch's puts (ops) change in their
// namespaces. current is false when one of them is no longer at its revision (revs): the
// batch would fail.
func (s *Store) batchDeltas(ctx context.Context, objs []v4.Object, ops []clientv3.Op, revs []int64) (usageDeltas, bool, error) {
	var idx []int
	for i, obj := range objs {
		if counted(obj.GetKind()) {
			idx = append(idx, i)
		}
	}
	var deltas usageDeltas
	for start := 0; start < len(idx); start += readChunk {
		chunk := idx[start:min(start+readChunk, len(idx))]
		reads := make([]clientv3.Op, len(chunk))
		for j, i := range chunk {
			reads[j] = clientv3.OpGet(string(ops[i].KeyBytes()))
		}
		resp, err := s.client.Txn(ctx).Then(reads...).Commit()
		if err != nil {
			return nil, false, fmt.Errorf("update %d objects: %w", len(objs), wrapEtcd(err))
		}
		for j, i := range chunk {
			kvs := resp.Responses[j].GetResponseRange().Kvs
			if len(kvs) == 0 || kvs[0].ModRevision != revs[i] {
				return nil, false, nil
			}
			deltas.add(objs[i].GetKind(), objs[i].GetMeta().Namespace, 0, opBytes(ops[i])-int64(len(kvs[0].Value)))
		}
	}
	return deltas, true, nil
}

// changed reports whether the Else reads of keysOf find an object gone or at another
// revision than revs.
func changed(reads []*pb.ResponseOp, revs []int64) bool {
	for i, r := range reads {
		kvs := r.GetResponseRange().Kvs
		if len(kvs) == 0 || kvs[0].ModRevision != revs[i] {
			return true
		}
	}
	return false
}
