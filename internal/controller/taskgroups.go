package controller

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store/cache"
)

// indexOwner indexes task groups by their owner (ownerKey); the controllers read an
// application's task groups through it.
const indexOwner = "owner"

// ownerKey is the owner index value of the task groups of one workload.
func ownerKey(ns string, kind v4.Kind, name string) string {
	return ns + "/" + string(kind) + "/" + name
}

// taskGroupOwner is the IndexFunc of indexOwner.
func taskGroupOwner(o v4.Object) string {
	tg := o.(*v4.TaskGroup)
	return ownerKey(tg.Metadata.Namespace, tg.Spec.Owner.Kind, tg.Spec.Owner.Name)
}

// IndexNode indexes a task group cache by the node the task groups are bound to (the
// node lifecycle's losses, the agents' lists and watches).
const IndexNode = "node"

func taskGroupNode(o v4.Object) string { return o.(*v4.TaskGroup).Spec.Node }

// IndexNamespace indexes a task group cache by namespace (the API's watches of a
// namespace's task groups).
const IndexNamespace = "namespace"

func taskGroupNamespace(o v4.Object) string { return o.GetMeta().Namespace }

// catchUpTimeout bounds a reconcile's wait for the cache to reflect its controller's
// writes; beyond it the reconcile fails and backs off.
const catchUpTimeout = 10 * time.Second

// cacheView is how a controller reads one kind from a cache (docs/store.md, "Shared
// cache") without reading or decoding anything from etcd, and still reads its own
// writes: each object it creates or updates records the write's revision, and a read
// first waits until the cache reflects it.
type cacheView struct {
	cache   *cache.Cache
	written atomic.Int64
}

// taskGroupView is how a controller reads task groups: by owner, from the shared cache,
// so that an instance just placed is never placed twice. (A deletion not yet seen only
// delays a replacement until the deletion's event, which queues the owner again.)
type taskGroupView struct {
	cacheView
}

// wrote records a write at resourceVersion rv.
func (v *cacheView) wrote(rv string) {
	if rev, err := strconv.ParseInt(rv, 10, 64); err == nil {
		v.wroteAt(rev)
	}
}

// wroteAt records a write (a delete too) at etcd revision rev.
func (v *cacheView) wroteAt(rev int64) {
	for {
		cur := v.written.Load()
		if rev <= cur || v.written.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// caughtUp waits until the cache holds every write recorded.
func (v *cacheView) caughtUp(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, catchUpTimeout)
	defer cancel()
	return v.cache.WaitFor(ctx, v.written.Load())
}

// ofOwner returns the task groups of one workload: the cached objects themselves, to be
// read only (a writer copies one first, as remove does). A pass over an application of
// 10,000 instances copied 10,000 task groups at each status change of one of them, most
// of the controller's time and garbage in such a burst.
func (v *taskGroupView) ofOwner(ctx context.Context, ns string, kind v4.Kind, name string) ([]*v4.TaskGroup, error) {
	if err := v.caughtUp(ctx); err != nil {
		return nil, err
	}
	objs, _, err := v.cache.List(indexOwner, ownerKey(ns, kind, name))
	if err != nil {
		return nil, fmt.Errorf("task groups of %s %s/%s: %w", kind, ns, name, err)
	}
	out := make([]*v4.TaskGroup, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*v4.TaskGroup))
	}
	return out, nil
}

// forDependency returns every task group, for the dependency ns/name's pass: which task
// groups depend on it, and which are its pods. Its pods are copies, as onNode's (the
// pass stops them by writing them); the others are the cached objects themselves, to be
// read only.
func (v *taskGroupView) forDependency(ctx context.Context, ns, name string) ([]*v4.TaskGroup, error) {
	if err := v.caughtUp(ctx); err != nil {
		return nil, err
	}
	objs, _, err := v.cache.List("", "")
	if err != nil {
		return nil, err
	}
	out := make([]*v4.TaskGroup, 0, len(objs))
	for _, o := range objs {
		tg := o.(*v4.TaskGroup)
		if tg.Spec.Owner.Kind == v4.KindDependency && tg.Metadata.Namespace == ns && tg.Spec.Owner.Name == name {
			cp := *tg
			tg = &cp
		}
		out = append(out, tg)
	}
	return out, nil
}

// onNode returns the task groups bound to node: copies of the cached ones (a caller may
// set their fields and write them), sharing their maps and slices, which must not be
// modified in place.
func (v *taskGroupView) onNode(ctx context.Context, node string) ([]*v4.TaskGroup, error) {
	if err := v.caughtUp(ctx); err != nil {
		return nil, err
	}
	objs, _, err := v.cache.List(IndexNode, node)
	if err != nil {
		return nil, fmt.Errorf("task groups of node %s: %w", node, err)
	}
	out := make([]*v4.TaskGroup, 0, len(objs))
	for _, o := range objs {
		cp := *o.(*v4.TaskGroup)
		out = append(out, &cp)
	}
	return out, nil
}
