package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
)

// DependencyController runs dependency pods in the manner of Lain deployd: a pod of a
// dependency starts on a node when the first task group that declares it lands there,
// is shared by every dependent on that node (policy node) or by those of one namespace
// (policy namespace), and is collected Options.DependencyGC after its last dependent went.
//
// Unlike deployd, which counted references up and down from add/remove events (so a lost
// remove left a pod referenced forever), the reference count is recomputed from the live
// task groups on every reconcile.
type DependencyController struct {
	store *store.Store
	feed  *feed.Feed
	opts  Options
	log   *slog.Logger
	queue *queue[depKey]
	// pods reuses the controllers' shared graceful stop and delete of task groups.
	pods base
	*recorder

	// Only the queue's single worker touches what follows.
	termStart time.Time
	// unused holds, per dependency and pod, when the pod was first seen without dependents.
	unused map[depKey]map[podKey]time.Time
	// missing lists the event ids recorded for dependents of a dependency that does not
	// exist, forgotten when it appears so that a later deletion is reported again.
	missing map[depKey][]string
}

// NewDependencyController builds the controller; Run drives it.
func NewDependencyController(st *store.Store, f *feed.Feed, opts Options) *DependencyController {
	opts = opts.withDefaults()
	log := opts.Logger.With("controller", "dependency")
	rec := newRecorder(st, log)
	return &DependencyController{store: st, feed: f, opts: opts, log: log, queue: newQueue[depKey](),
		pods:     newBaseOf(st, f, opts, log, rec),
		recorder: rec, unused: map[depKey]map[podKey]time.Time{}, missing: map[depKey][]string{}}
}

// Run watches dependencies and task groups and reconciles until ctx ends. The term starts
// when Run is called: no pod is collected in the first DependencyGC after it.
func (c *DependencyController) Run(ctx context.Context) error {
	c.termStart = time.Now()
	deps := c.pods.cache(v4.KindDependency)
	return loop{feed: c.feed, caches: []*cache.Cache{c.pods.tgs.cache, deps},
		follow: []func(context.Context){
			follow(deps, c.log, c.enqueueDependency),
			// Task groups come from the shared cache, which lists again after any gap in
			// its watch (its watchers get every task group again): no resync of them is
			// needed.
			follow(c.pods.tgs.cache, c.log, c.enqueueTaskGroup),
		},
		// The resync also reports missing dependencies again.
		resync: c.enqueueDependency, resyncFrom: []*cache.Cache{deps},
		work: func(ctx context.Context) {
			work(ctx, "dependency", c.opts.Metrics, 1, c.queue, c.log, c.recorder, aboutDependency, c.reconcile)
		}}.run(ctx)
}

func (c *DependencyController) enqueueDependency(o v4.Object) {
	m := o.GetMeta()
	c.queue.Add(depKey{m.Namespace, m.Name})
}

// enqueueTaskGroup queues the owner of a dependency pod, or every dependency a dependent
// declares.
func (c *DependencyController) enqueueTaskGroup(o v4.Object) {
	tg, ok := o.(*v4.TaskGroup)
	if !ok {
		return
	}
	if tg.Spec.Owner.Kind == v4.KindDependency {
		c.queue.Add(depKey{tg.Metadata.Namespace, tg.Spec.Owner.Name})
		return
	}
	for _, r := range refsOf(tg) {
		c.queue.Add(r.dep)
	}
}

// reconcile brings one dependency's pods in line with its dependents and returns when to
// look again.
func (c *DependencyController) reconcile(ctx context.Context, key depKey) (time.Duration, error) {
	var dep *v4.Dependency
	obj, err := c.store.Get(ctx, v4.KindDependency, key.Namespace, key.Name)
	switch {
	case err == nil:
		dep = obj.(*v4.Dependency)
		if msg := c.pods.guard.check(dep); msg != "" { // its pods stay as they are
			c.log.Warn("dependency left as it is", "dependency", key.String(), "reason", msg)
			return 0, nil
		}
	case !errors.Is(err, store.ErrNotFound):
		return 0, fmt.Errorf("get dependency %s: %w", key, err)
	default:
		c.pods.guard.forget(v4.KindDependency, key.Namespace, key.Name)
	}
	tgs, err := c.pods.tgs.forDependency(ctx, key.Namespace, key.Name)
	if err != nil {
		return 0, fmt.Errorf("task groups for dependency %s: %w", key, err)
	}
	refs, owners := dependents(key, tgs)
	c.reportMissing(key, dep, owners)
	in := planInput{dep: dep, refs: refs, pods: podsOf(key, tgs), unused: c.unusedOf(key, dep),
		now: time.Now(), termStart: c.termStart, gc: c.opts.DependencyGC}
	r := &depPass{c: c, key: key, dep: dep, tgs: tgs, now: in.now, unused: map[podKey]time.Time{}}
	for _, p := range planPods(in) {
		if err := r.apply(ctx, p); err != nil {
			return 0, err
		}
	}
	c.unused[key] = r.unused
	if dep == nil {
		delete(c.unused, key)
		return r.next, nil
	}
	if err := c.updateStatus(ctx, key, r.status()); err != nil {
		return 0, err
	}
	return r.next, nil
}

// unusedOf returns the dependency's unused-since times. A new term starts from what the
// last leader wrote in the status; the term guard still holds collections back.
func (c *DependencyController) unusedOf(key depKey, dep *v4.Dependency) map[podKey]time.Time {
	m := c.unused[key]
	if m != nil {
		return m
	}
	m = map[podKey]time.Time{}
	if dep != nil {
		for _, p := range dep.Status.Pods {
			if !p.LastUsed.IsZero() && p.RefCount == 0 {
				m[podKey{node: p.Node, scope: p.Scope}] = p.LastUsed
			}
		}
	}
	c.unused[key] = m
	return m
}

// reportMissing warns the dependents of a dependency that does not exist: they run
// without it (deployd's weak reference), which is not an error.
func (c *DependencyController) reportMissing(key depKey, dep *v4.Dependency, owners []scheduler.AppKey) {
	if dep != nil {
		c.forget(c.missing[key]...)
		delete(c.missing, key)
		return
	}
	for _, o := range owners {
		id := "missing/" + key.String() + "/" + o.String()
		if _, seen := c.lookup(id); !seen {
			c.missing[key] = append(c.missing[key], id)
		}
		c.recordOnce(id, "missing", v4.Event{Type: v4.EventWarning, Reason: "DependencyMissing", Kind: o.Kind, Namespace: o.Namespace, Name: o.Name,
			Message: fmt.Sprintf("%s %s/%s declares dependency %s, which does not exist: it runs without it", o.Kind, o.Namespace, o.Name, key)})
	}
}

// event records an event about the dependency.
func (c *DependencyController) event(key depKey, typ, reason, msg string) {
	c.record(v4.Event{Type: typ, Reason: reason, Kind: v4.KindDependency, Namespace: key.Namespace, Name: key.Name, Message: msg})
}

// eventOnce records an event about the dependency unless dedup was the last value
// recorded for id.
func (c *DependencyController) eventOnce(id, dedup string, key depKey, typ, reason, msg string) {
	c.recordOnce(id, dedup, v4.Event{Type: typ, Reason: reason, Kind: v4.KindDependency, Namespace: key.Namespace, Name: key.Name, Message: msg})
}
