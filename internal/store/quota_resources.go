package store

import (
	"context"
	"fmt"
	"sync"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/quota"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// usageKinds are the kinds whose objects ask for a namespace's resources
// (quota.Usage): workloads by their spec, task groups of jobs and workflows while active.
var usageKinds = []v4.Kind{v4.KindApplication, v4.KindProcess, v4.KindDeployment, v4.KindDaemonset, v4.KindTaskGroup}

// ResourceUsage is what ns's objects ask of the cluster (docs/policy.md, "Counting"),
// counted from what it holds as of one etcd revision: a namespace's resource usage is
// recomputed from the stored state at each check, never kept in a counter, so it cannot
// drift, and a leader change or a server that stopped mid-write leaves nothing to repair.
func (s *Store) ResourceUsage(ctx context.Context, ns string) (quota.List, error) {
	objs, err := s.NamespaceObjects(ctx, ns)
	if err != nil {
		return nil, err
	}
	return quota.Usage(objs), nil
}

// NamespaceObjects lists ns's objects that ask for resources (usageKinds), as of one
// revision: the server's admission replaces the ones a request writes and counts again.
// The objects are shared with later calls: callers must not change them.
//
// It reads the keys only, with their mod revisions, and decodes only the objects that
// changed since this store last decoded them (usageMemo): decoding is what a count of a
// large namespace spends its time on. Every kind's keys come in one read-only
// transaction, and the changed objects of every kind in a second one: an admission
// holds its namespace's quota lock across this count, and each linearizable read
// waits for etcd to apply what was committed before it, so two reads instead of one
// or more per kind shorten the time a namespace's writes wait for each other.
func (s *Store) NamespaceObjects(ctx context.Context, ns string) ([]v4.Object, error) {
	if err := checkName("namespace", ns); err != nil {
		return nil, fmt.Errorf("namespace objects: %w: %w", ErrInvalid, err)
	}
	objs, _, err := s.namespaceObjects(ctx, ns, false)
	return objs, err
}

// namespaceObjects is NamespaceObjects; with fence, the namespace's quota fence is read
// in the same transaction (quota_fence.go) and its mod revision returned.
func (s *Store) namespaceObjects(ctx context.Context, ns string, fence bool) ([]v4.Object, int64, error) {
	ops := make([]clientv3.Op, len(usageKinds), len(usageKinds)+1)
	for i, kind := range usageKinds {
		ops[i] = clientv3.OpGet(objectPrefix(kind, ns), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	}
	if fence {
		ops = append(ops, clientv3.OpGet(fenceKey(ns), clientv3.WithKeysOnly()))
	}
	resp, err := s.client.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, 0, fmt.Errorf("objects of namespace %s: %w", ns, wrapEtcd(err))
	}
	rev := resp.Header.Revision
	var fenced int64
	if fence {
		fenced = fenceRev(resp.Responses[len(usageKinds)].GetResponseRange().GetKvs())
	}
	var objs []v4.Object
	stale := make([]map[string]bool, len(usageKinds))
	for i, r := range resp.Responses[:len(usageKinds)] {
		stale[i] = map[string]bool{}
		for _, kv := range r.GetResponseRange().GetKvs() {
			switch o, known := s.quota.objects.get(string(kv.Key), kv.CreateRevision, kv.ModRevision); {
			case known == memoNever:
			case known == memoCurrent:
				objs = append(objs, o)
			default:
				stale[i][string(kv.Key)] = true
			}
		}
	}
	fresh, err := s.readChanged(ctx, ns, stale, rev)
	if err != nil {
		return nil, 0, fmt.Errorf("objects of namespace %s: %w", ns, err)
	}
	return append(objs, fresh...), fenced, nil
}

// memoSingleReads is how many changed objects of one kind are read one by one; past it
// the kind's whole range is read (and only the changed ones decoded).
const memoSingleReads = 8

// readChanged reads and decodes, at rev and in one transaction, the objects of keys
// (keys[i] of usageKinds[i], in ns), and remembers them.
func (s *Store) readChanged(ctx context.Context, ns string, keys []map[string]bool, rev int64) ([]v4.Object, error) {
	var ops []clientv3.Op
	var kindOf []int // usageKinds' index of each op
	for i, kind := range usageKinds {
		switch n := len(keys[i]); {
		case n == 0:
		case n <= memoSingleReads:
			for k := range keys[i] {
				ops, kindOf = append(ops, clientv3.OpGet(k, clientv3.WithRev(rev))), append(kindOf, i)
			}
		default:
			ops = append(ops, clientv3.OpGet(objectPrefix(kind, ns), clientv3.WithPrefix(), clientv3.WithRev(rev)))
			kindOf = append(kindOf, i)
		}
	}
	if len(ops) == 0 {
		return nil, nil
	}
	resp, err := s.client.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, wrapEtcd(err)
	}
	var out []v4.Object
	for j, r := range resp.Responses {
		i := kindOf[j]
		for _, kv := range r.GetResponseRange().GetKvs() {
			if !keys[i][string(kv.Key)] {
				continue
			}
			obj, err := s.decodeObject(usageKinds[i], kv)
			if err != nil {
				return nil, err
			}
			if tg, ok := obj.(*v4.TaskGroup); ok && !quota.TaskGroupCounts(tg) {
				// A workload's instance: its spec counts it. Its key is skipped
				// while it lives, however often its status changes.
				s.quota.objects.put(string(kv.Key), kv.CreateRevision, kv.ModRevision, nil)
				continue
			}
			s.quota.objects.put(string(kv.Key), kv.CreateRevision, kv.ModRevision, obj)
			out = append(out, obj)
		}
	}
	return out, nil
}

// usageMemo remembers the objects NamespaceObjects decoded, by key, with the create
// and mod revisions they were decoded at; and the keys of task groups that never count
// (a workload's instances, whose status changes all the time), by create revision:
// a namespace of a thousand instances is counted without decoding them again. It
// holds at most usageMemoSize of them and starts over when full (the next counts
// decode again).
type usageMemo struct {
	mu   sync.Mutex
	objs map[string]memoObject
}

// memoObject is one key's entry: obj is nil for a task group that never counts.
type memoObject struct {
	created, rev int64
	obj          v4.Object
}

const usageMemoSize = 100_000

// memoKnown is what the memo knows of a key at some revisions.
type memoKnown int

const (
	memoStale   memoKnown = iota // nothing, or an older version: decode it
	memoCurrent                  // the object at these revisions
	memoNever                    // a task group that never counts, as created then
)

func (m *usageMemo) get(key string, created, rev int64) (v4.Object, memoKnown) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.objs[key]
	switch {
	case !ok || e.created != created:
		return nil, memoStale
	case e.obj == nil:
		return nil, memoNever
	case e.rev != rev:
		return nil, memoStale
	}
	return e.obj, memoCurrent
}

func (m *usageMemo) put(key string, created, rev int64, obj v4.Object) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.objs == nil || len(m.objs) >= usageMemoSize {
		m.objs = map[string]memoObject{}
	}
	m.objs[key] = memoObject{created: created, rev: rev, obj: obj}
}
