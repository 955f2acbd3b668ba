package store

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	v4 "github.com/berthhq/berth/api/v4"
)

// ListEach reads etcd a chunk at a time, eachChunkBytes or so: the number of keys of the
// next chunk follows the size of the objects read so far, between eachMinKeys and
// eachMaxKeys, so a list of any size, of small or of large objects, holds about that
// much in memory at once.
const (
	eachChunkBytes = 1 << 20
	eachMinKeys    = 8
	eachMaxKeys    = 512
	eachFirstKeys  = 16
)

// ListEach calls fn with every object of kind in ns ("" for all namespaces), in key
// order, as of one revision (the first read's), reading etcd a chunk at a time: a list
// of any size is served in bounded memory. start is called once, with that revision,
// before the first object (also for an empty list). An error of fn stops the walk and is
// returned as it is.
func (s *Store) ListEach(ctx context.Context, kind v4.Kind, ns string, start func(rev int64) error, fn func(v4.Object) error) error {
	if err := checkKey(kind, ns, ""); err != nil {
		return fmt.Errorf("list %s in %q: %w", kind, ns, err)
	}
	return s.eachKV(ctx, objectPrefix(kind, ns), fmt.Sprintf("%s in %q", kind, ns), start, func(kv *mvccpb.KeyValue) error {
		obj, err := s.decodeObject(kind, kv)
		if err != nil {
			return fmt.Errorf("list %s in %q: %w", kind, ns, err)
		}
		return fn(obj)
	})
}

// eachKV calls fn with every key under pfx, in key order, as of one revision (the first
// read's), a chunk at a time (ListEach); start is called once with that revision before
// the first key. A failed read is named by what; an error of start or fn is returned as it
// is.
func (s *Store) eachKV(ctx context.Context, pfx, what string, start func(rev int64) error, fn func(*mvccpb.KeyValue) error) error {
	end := clientv3.GetPrefixRangeEnd(pfx)
	from, rev := pfx, int64(0)
	keys := int64(eachFirstKeys)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(keys)}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := s.client.Get(ctx, from, opts...)
		if err != nil {
			return fmt.Errorf("list %s: %w", what, wrapEtcd(err))
		}
		if rev == 0 {
			rev = resp.Header.Revision
			if err := start(rev); err != nil {
				return err
			}
		}
		size := 0
		for _, kv := range resp.Kvs {
			size += len(kv.Value)
			if err := fn(kv); err != nil {
				return err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		keys = min(max(int64(eachChunkBytes*len(resp.Kvs)/max(size, 1)), eachMinKeys), eachMaxKeys)
	}
}
