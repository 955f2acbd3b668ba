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
