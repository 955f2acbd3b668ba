package store

import (
	"context"
	"errors"
	"fmt"
	"time"

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
		ops = append(ops, s.putObject(kind, meta.Namespace, meta.Name, val),
			s.putRaw(kind, meta.Namespace, meta.Name, Raw{ContentType: ContentTypeJSON, Data: val}))
	}
	resp, err := s.client.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return fmt.Errorf("create %d objects: %w", len(objs), wrapEtcd(err))
	}
	if !resp.Succeeded { // one exists: each on its own
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
	for i, obj := range objs {
		meta := obj.GetMeta()
		meta.CreationTimestamp = now
		meta.ResourceVersion = formatRev(resp.Header.Revision)
		created[i] = true
	}
	return nil
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
	for _, obj := range objs {
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
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(objectKey(kind, meta.Namespace, meta.Name)), "=", rev))
		ops = append(ops, s.putObject(kind, meta.Namespace, meta.Name, val))
	}
	resp, err := s.client.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return fmt.Errorf("update %d objects: %w", len(objs), wrapEtcd(err))
	}
	if !resp.Succeeded {
		return nil
	}
	for i, obj := range objs {
		obj.GetMeta().ResourceVersion = formatRev(resp.Header.Revision)
		updated[i] = true
	}
	return nil
}
