package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/ctxtime"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
)

// Timing of the application controller.
const (
	unplacedRetry = 10 * time.Second // retry placing instances that fit nowhere
	// resyncEvery is how often every workload is looked at again: only a safety net.
	// Changes come through watches that list afresh after any gap, and a reconcile
	// returns when its next deadline is due (a backoff, a rollout step, a retry).
	resyncEvery = 5 * time.Minute
	// stopTimeout is how long a task group asked to stop may take beyond its grace
	// period before it is deleted anyway (the agent then kills what is left).
	stopTimeout = 30 * time.Second
	// appWorkers reconcile applications (and daemonsets) at once: a reconcile mostly
	// waits for etcd (its placements' transaction, its status write), and the
	// scheduler's snapshot serializes the placements themselves.
	appWorkers = 4
)

// AppController keeps applications and processes at their instance count.
type AppController struct {
	base
	opts  Options
	queue *queue[scheduler.AppKey]
	// apps are the shared caches of applications and processes: a reconcile reads its
	// workload there instead of etcd (a linearizable read each, which in a burst of a
	// thousand applications waited behind every write).
	apps map[v4.Kind]*cacheView
}

// NewAppController builds the controller; Run drives it.
func NewAppController(st *store.Store, f *feed.Feed, opts Options) *AppController {
	opts = opts.withDefaults()
	log := opts.Logger.With("controller", "application")
	b := newBase(st, f, opts, log)
	c := &AppController{base: b, opts: opts, queue: newQueue[scheduler.AppKey](), apps: b.workloads()}
	c.queue.prio = c.priorityOf // higher priorities are reconciled, and placed, first
	return c
}

// priorityOf is the recorded priority of a workload in the cache (0 when it has none or
// is not there).
func (c *AppController) priorityOf(key scheduler.AppKey) int32 {
	v := c.apps[key.Kind]
	if v == nil {
		return 0
	}
	o, ok := v.cache.Get(key.Namespace, key.Name)
	if !ok {
		return 0
	}
	return workload(o).Spec.PriorityValue()
}

// appKinds are the kinds this controller owns.
var appKinds = []v4.Kind{v4.KindApplication, v4.KindProcess}

// Run watches applications, processes and task groups and reconciles until ctx ends.
func (c *AppController) Run(ctx context.Context) error {
	l := loop{feed: c.feed, caches: []*cache.Cache{c.tgs.cache}, resync: c.enqueueObject, start: c.restoreNominations,
		follow: []func(context.Context){follow(c.tgs.cache, c.log, c.enqueueOwner)},
		work: func(ctx context.Context) {
			work(ctx, "application", c.opts.Metrics, appWorkers, c.queue, c.log, c.recorder, aboutApp, c.reconcile)
		}}
	for _, kind := range appKinds {
		v := c.apps[kind]
		l.caches = append(l.caches, v.cache)
		l.resyncFrom = append(l.resyncFrom, v.cache)
		l.follow = append(l.follow, follow(v.cache, c.log, c.enqueueObject))
	}
	return l.run(ctx)
}

func (c *AppController) enqueueObject(o v4.Object) {
	m := o.GetMeta()
	c.queue.Add(scheduler.AppKey{Kind: o.GetKind(), Namespace: m.Namespace, Name: m.Name})
}

func (c *AppController) enqueueOwner(o v4.Object) {
	tg, ok := o.(*v4.TaskGroup)
	if !ok {
		return
	}
	if k, ok := preemptorOf(tg); ok && slices.Contains(appKinds, k.Kind) { // a victim changed: its preemptor looks again
		c.queue.Add(k)
	}
	if !slices.Contains(appKinds, tg.Spec.Owner.Kind) {
		return
	}
	c.queue.Add(scheduler.AppKey{Kind: tg.Spec.Owner.Kind, Namespace: tg.Metadata.Namespace, Name: tg.Spec.Owner.Name})
}

// sleep waits d or until ctx ends; a loop that goes on checks ctx itself.
func sleep(ctx context.Context, d time.Duration) { _ = ctxtime.Sleep(ctx, d) }

// workloadOf returns the application or process of key from the shared cache, as a copy
// whose fields can be set. What the cache does not hold is read from etcd before it is
// taken for deleted: a workload just created may not have reached the cache yet, and a
// reconcile that took it for deleted would stop its instances.
func (c *AppController) workloadOf(ctx context.Context, key scheduler.AppKey) (v4.Object, error) {
	v := c.apps[key.Kind]
	if v == nil {
		return nil, fmt.Errorf("%s is not a workload kind", key.Kind)
	}
	if err := v.caughtUp(ctx); err != nil {
		return nil, err
	}
	if o, ok := v.cache.Get(key.Namespace, key.Name); ok {
		return copyWorkload(o), nil
	}
	return c.store.Get(ctx, key.Kind, key.Namespace, key.Name)
}

// taskGroupsOf lists the application's task groups by index.
func (c *AppController) taskGroupsOf(ctx context.Context, key scheduler.AppKey) (map[int][]*v4.TaskGroup, error) {
	tgs, err := c.tgs.ofOwner(ctx, key.Namespace, key.Kind, key.Name)
	if err != nil {
		return nil, fmt.Errorf("list task groups of %s: %w", key, err)
	}
	out := map[int][]*v4.TaskGroup{}
	for _, tg := range tgs {
		out[tg.Spec.Index] = append(out[tg.Spec.Index], tg)
	}
	for _, tgs := range out { // newest run of an index last
		slices.SortFunc(tgs, byRun)
	}
	return out, nil
}

// reconcile brings one application to its spec and returns when to look again.
func (c *AppController) reconcile(ctx context.Context, key scheduler.AppKey) (time.Duration, error) {
	obj, err := c.workloadOf(ctx, key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return 0, err
	}
	byIndex, err := c.taskGroupsOf(ctx, key)
	if err != nil {
		return 0, err
	}
	if obj == nil { // deleted: stop and remove everything it had
		all := flatten(byIndex)
		c.guard.forget(key.Kind, key.Namespace, key.Name)
		c.forgetPreemption(key)
		c.endOperation(ctx, key, v4.OpScale)
		c.endOperation(ctx, key, v4.OpMove)
		c.endOperation(ctx, key, v4.OpReplace)
		return c.removeAll(ctx, all), nil
	}
	w := workload(obj)
	if msg := c.guard.check(obj); msg != "" { // what runs stays; nothing is placed or restarted
		st := w.Status
		st.Updated, st.Message = time.Time{}, msg
		return 0, c.updateStatus(ctx, key, st)
	}
	c.syncBudget(key, w)
	r := &pass{c: c, key: key, obj: obj, w: w, now: time.Now(), attempts: map[int]restartInfo{}}
	for _, idx := range slices.Sorted(maps.Keys(byIndex)) {
		tgs := byIndex[idx]
		if idx >= w.Spec.Instance { // scaled down: the highest indexes go
			r.surplus = true
			r.wake(c.removeAll(ctx, tgs))
			continue
		}
		rs := splitRuns(tgs)
		if v4.IsStopped(w.Spec.StoppedInstances, idx) {
			if err := r.stoppedInstance(ctx, idx, rs); err != nil {
				return 0, err
			}
			continue
		}
		r.wake(c.removeAll(ctx, rs.old)) // older runs of the index
		r.handleMove(ctx, rs)
		if err := r.instance(ctx, idx, rs.cur); err != nil {
			return 0, err
		}
	}
	for idx := range w.Spec.Instance {
		switch {
		case len(byIndex[idx]) > 0:
		case v4.IsStopped(w.Spec.StoppedInstances, idx): // stopped with no run left: nothing to place
			r.stopped++
		default:
			r.missing = append(r.missing, idx)
		}
	}
	if err := r.placeMissing(ctx); err != nil {
		return 0, err
	}
	c.clearStaleHolds(key, r.nominated)
	if err := r.placeMoves(ctx); err != nil {
		return 0, err
	}
	st := r.status()
	if err := c.updateStatus(ctx, key, st); err != nil {
		return 0, err
	}
	if st.Running+st.Stopped == w.Spec.Instance && !r.surplus && !r.stopping {
		c.endOperation(ctx, key, v4.OpScale) // the scale, if one was asked, is done
	}
	// One read of the operation in progress serves the move and the replace.
	op, err := c.store.Operation(ctx, key.Kind, key.Namespace, key.Name)
	if err != nil {
		return 0, err
	}
	c.endMove(ctx, key, op, byIndex, r.now)
	if err := c.advanceReplace(ctx, key, op, w, byIndex); err != nil {
		return 0, fmt.Errorf("replace the instances of %s: %w", key, err)
	}
	return r.next, nil
}

// workload returns the shared part of applications and processes.
func workload(o v4.Object) *v4.Workload {
	switch w := o.(type) {
	case *v4.Application:
		return &w.Workload
	case *v4.Process:
		return &w.Workload
	}
	panic(fmt.Sprintf("controller: %T is not a workload", o)) // only appKinds are queued
}

// endOperation ends the application's operation of type typ, if one is in progress.
func (c *AppController) endOperation(ctx context.Context, key scheduler.AppKey, typ string) {
	if err := c.store.EndOperation(ctx, key.Kind, key.Namespace, key.Name, typ); err != nil {
		c.log.Warn("end operation", "app", key.String(), "operation", typ, "err", err)
	}
}
