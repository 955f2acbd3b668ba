package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
)

// CronController starts the runs of cronjobs and cronworkflows (docs/cron.md): at each
// time a schedule fires it creates a job or a workflow named after the scheduled time,
// and moves the cron object's status.lastScheduleTime in the same transaction
// (store.CreateWithUpdate). A new leader that finds the same time due makes the same
// name and gets "exists": a run never starts twice. Runs after an outage start at most
// once (the latest missed time). It applies the concurrency policy, suspend, the
// starting deadline and the history limits, and reports the active runs, found again
// from their label after a failover.
type CronController struct {
	base
	opts  Options
	queue *queue[scheduler.AppKey]
	// crons are the cronjob and cronworkflow caches, runs the job and workflow caches
	// (indexed by parent, indexCron), each by its kind.
	crons map[v4.Kind]*cacheView
	runs  map[v4.Kind]*cacheView
	// now is the controller's clock; tests set it.
	now func() time.Time
	// maxActive bounds the active runs of one cron object (v4.MaxCronActive): past it
	// a due time waits, whatever the policy, so that an Allow schedule whose runs never
	// end cannot fill the store.
	maxActive int
}

// indexCron indexes jobs and workflows by the cron object that created them
// (cronParentKey); none for the others.
const indexCron = "cron"

// cronParentKey is the indexCron value of the runs of cron object ns/name.
func cronParentKey(ns, name string) string { return ns + "/" + name }

func jobCronParent(o v4.Object) string { return labelParent(o, v4.CronJobLabel) }

func workflowCronParent(o v4.Object) string { return labelParent(o, v4.CronWorkflowLabel) }

func labelParent(o v4.Object, label string) string {
	m := o.GetMeta()
	if p := m.Labels[label]; p != "" {
		return cronParentKey(m.Namespace, p)
	}
	return ""
}

// cronKinds pairs each cron kind with the kind of its runs.
var cronKinds = map[v4.Kind]v4.Kind{v4.KindCronJob: v4.KindJob, v4.KindCronWorkflow: v4.KindWorkflow}

// NewCronController builds the controller; Run drives it.
func NewCronController(st *store.Store, opts Options) *CronController {
	opts = opts.withDefaults()
	log := opts.Logger.With("controller", "cron")
	c := &CronController{base: newBaseOf(st, nil, opts, log, newRecorder(st, log)), opts: opts,
		queue: newQueue[scheduler.AppKey](), crons: map[v4.Kind]*cacheView{}, runs: map[v4.Kind]*cacheView{}, now: time.Now,
		maxActive: v4.MaxCronActive}
	for k, child := range cronKinds {
		c.crons[k] = &cacheView{cache: c.cache(k)}
		c.runs[child] = &cacheView{cache: c.cache(child)}
	}
	return c
}

// Run watches the cron objects and their runs and reconciles until ctx ends.
func (c *CronController) Run(ctx context.Context) error {
	var caches, crons []*cache.Cache
	var follows []func(context.Context)
	for k, child := range cronKinds {
		crons = append(crons, c.crons[k].cache)
		caches = append(caches, c.crons[k].cache, c.runs[child].cache)
		follows = append(follows, follow(c.crons[k].cache, c.log, c.enqueueObject),
			follow(c.runs[child].cache, c.log, func(o v4.Object) { c.enqueueParent(k, o) }))
	}
	return loop{caches: caches, follow: follows, resync: c.enqueueObject, resyncFrom: crons,
		work: func(ctx context.Context) {
			work(ctx, "cron", c.opts.Metrics, appWorkers, c.queue, c.log, c.recorder, aboutApp, c.reconcile)
		}}.run(ctx)
}

func (c *CronController) enqueueObject(o v4.Object) {
	m := o.GetMeta()
	c.queue.Add(scheduler.AppKey{Kind: o.GetKind(), Namespace: m.Namespace, Name: m.Name})
}

// enqueueParent queues the cron object of kind that created run o, if one did.
func (c *CronController) enqueueParent(kind v4.Kind, o v4.Object) {
	m := o.GetMeta()
	if p := m.Labels[v4.CronLabel(kind)]; p != "" {
		c.queue.Add(scheduler.AppKey{Kind: kind, Namespace: m.Namespace, Name: p})
	}
}

// cronOf returns the cron object of key (a copy whose status may be set), from the
// cache or, when the cache does not hold it yet, from etcd; nil when it is gone.
func (c *CronController) cronOf(ctx context.Context, key scheduler.AppKey) (v4.Object, error) {
	view := c.crons[key.Kind]
	if err := view.caughtUp(ctx); err != nil {
		return nil, err
	}
	o, ok := view.cache.Get(key.Namespace, key.Name)
	if !ok {
		got, err := c.store.Get(ctx, key.Kind, key.Namespace, key.Name)
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
		return got, err
	}
	switch x := o.(type) {
	case *v4.CronJob:
		cp := *x
		cp.Status.Active = append([]v4.CronRun(nil), x.Status.Active...)
		return &cp, nil
	case *v4.CronWorkflow:
		cp := *x
		cp.Status.Active = append([]v4.CronRun(nil), x.Status.Active...)
		return &cp, nil
	}
	return nil, fmt.Errorf("cron cache of %s holds a %T", key.Kind, o)
}

// runsOf lists the runs that cron object key created, from the cache.
func (c *CronController) runsOf(ctx context.Context, key scheduler.AppKey) ([]v4.Object, error) {
	view := c.runs[cronKinds[key.Kind]]
	if err := view.caughtUp(ctx); err != nil {
		return nil, err
	}
	objs, _, err := view.cache.List(indexCron, cronParentKey(key.Namespace, key.Name))
	return objs, err
}

// reconcile brings one cron object a step on and returns when to look again.
func (c *CronController) reconcile(ctx context.Context, key scheduler.AppKey) (time.Duration, error) {
	obj, err := c.cronOf(ctx, key)
	if err != nil {
		return 0, err
	}
	runs, err := c.runsOf(ctx, key)
	if err != nil {
		return 0, err
	}
	if obj == nil { // deleted: its runs go with it, as Kubernetes' garbage collector does
		for _, r := range runs {
			c.deleteRun(ctx, r)
		}
		return 0, nil
	}
	p := newCronPass(c, key, obj, runs, c.now())
	return p.run(ctx)
}

// deleteRun deletes a run (the job or workflow controller stops what it still runs).
func (c *CronController) deleteRun(ctx context.Context, r v4.Object) bool {
	m := r.GetMeta()
	_, rev, err := c.store.DeleteAt(ctx, r.GetKind(), m.Namespace, m.Name, "")
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		c.log.Warn("delete cron run", "kind", string(r.GetKind()), "namespace", m.Namespace, "name", m.Name, "err", err)
		return false
	}
	if err == nil {
		c.runs[r.GetKind()].wroteAt(rev)
	}
	return true
}

// writeStatus writes st on obj (read at its resourceVersion) when it changed.
func (c *CronController) writeStatus(ctx context.Context, obj v4.Object, st v4.CronStatus) error {
	_, cur, _, _ := v4.CronParts(obj)
	if sameJSON(*cur, st) {
		return nil
	}
	*cur = st
	if err := c.store.Update(ctx, obj, store.Raw{}); err != nil {
		return fmt.Errorf("update status of %s %s/%s: %w", obj.GetKind(), obj.GetMeta().Namespace, obj.GetMeta().Name, err)
	}
	c.opts.Metrics.statusWritten("cron")
	c.crons[obj.GetKind()].wrote(obj.GetMeta().ResourceVersion)
	return nil
}
