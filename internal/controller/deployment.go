package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
)

// DeploymentController rolls deployments between revisions (docs/deployments.md). A
// deployment owns one application (or process) per revision, "{name}-v{revision}"; the
// application controller runs their task groups, this controller only sets their
// instance counts. Every decision is taken from stored state (the deployment's status,
// its applications, their task groups), so a new leader carries a rollout on.
type DeploymentController struct {
	base
	opts  Options
	queue *queue[scheduler.AppKey]
	now   func() time.Time
	// kids read the shared caches of applications and processes, indexed by owning
	// deployment (deployment_children.go); task groups come from the shared cache
	// (base.tgs).
	kids map[v4.Kind]*cacheView
}

// NewDeploymentController builds the controller; Run drives it.
func NewDeploymentController(st *store.Store, opts Options) *DeploymentController {
	opts = opts.withDefaults()
	log := opts.Logger.With("controller", "deployment")
	b := newBase(st, nil, opts, log)
	return &DeploymentController{base: b, opts: opts, queue: newQueue[scheduler.AppKey](), now: time.Now, kids: b.workloads()}
}

// Run watches deployments, their applications and task groups, and reconciles until ctx ends.
func (c *DeploymentController) Run(ctx context.Context) error {
	deployments := c.cache(v4.KindDeployment)
	l := loop{caches: []*cache.Cache{c.tgs.cache, deployments},
		follow: []func(context.Context){follow(deployments, c.log, c.enqueue)},
		// A step's deadline comes back through the queue (the plan's wait); the resync is
		// a safety net only.
		resync: c.enqueue, resyncFrom: []*cache.Cache{deployments},
		work: func(ctx context.Context) {
			work(ctx, "deployment", c.opts.Metrics, 1, c.queue, c.log, c.recorder, aboutApp, c.reconcile)
		}}
	for _, kind := range appKinds {
		l.caches = append(l.caches, c.kids[kind].cache)
		l.follow = append(l.follow, follow(c.kids[kind].cache, c.log, c.enqueue))
	}
	l.follow = append(l.follow, follow(c.tgs.cache, c.log, c.enqueue))
	return l.run(ctx)
}

// enqueue queues the deployment an object concerns, if any.
func (c *DeploymentController) enqueue(o v4.Object) {
	if key, ok := deploymentOf(o); ok {
		c.queue.Add(key)
	}
}

// childName matches the applications of deployments: "{deployment}-v{revision}".
var childName = regexp.MustCompile(`^(.+)-v([0-9]+)$`)

// deploymentOf names the deployment an object concerns: itself, the owner of an
// application, or the owner of a task group's application.
func deploymentOf(o v4.Object) (scheduler.AppKey, bool) {
	m := o.GetMeta()
	key := scheduler.AppKey{Kind: v4.KindDeployment, Namespace: m.Namespace}
	switch o := o.(type) {
	case *v4.Deployment:
		key.Name = m.Name
	case *v4.TaskGroup:
		sub := childName.FindStringSubmatch(o.Spec.Owner.Name)
		if sub == nil {
			return key, false
		}
		key.Name = sub[1]
	default:
		owner, ok := ownerDeployment(m)
		if !ok {
			return key, false
		}
		key.Name = owner
	}
	return key, true
}

// reconcile brings one deployment one step closer to its spec and returns when to look again.
func (c *DeploymentController) reconcile(ctx context.Context, key scheduler.AppKey) (time.Duration, error) {
	obj, err := c.store.Get(ctx, v4.KindDeployment, key.Namespace, key.Name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return 0, err
	}
	children, err := c.children(ctx, key)
	if err != nil {
		return 0, err
	}
	if obj == nil { // deleted: its applications go too (the application controller stops their instances)
		c.guard.forget(key.Kind, key.Namespace, key.Name)
		for _, ch := range children {
			if err := c.deleteChild(ctx, ch); err != nil {
				return 0, err
			}
		}
		for _, op := range []string{v4.OpRollout, v4.OpUndo, v4.OpScale} {
			c.endOperation(ctx, key, op)
		}
		return 0, nil
	}
	d := obj.(*v4.Deployment)
	if msg := c.guard.check(d); msg != "" { // its applications stay as they are
		st := d.Status
		st.Message = msg
		return 0, c.writeStatus(ctx, d, st)
	}
	if d.Spec.Template == nil {
		msg := "deployments without a template (binding an existing application by selector, as BCS did) are not supported: give spec.template"
		c.recordOnce(key.String(), msg, c.eventFor(key, v4.EventWarning, "Unsupported", msg))
		st := d.Status
		st.Message = msg
		return 0, c.writeStatus(ctx, d, st)
	}
	if err := c.loadTaskGroups(ctx, children); err != nil {
		return 0, err
	}
	r := &rollout{c: c, key: key, d: d, st: d.Status, children: children, now: c.now().UTC()}
	return r.run(ctx)
}

// endOperation ends the deployment's operation of type typ, if one is in progress.
func (c *DeploymentController) endOperation(ctx context.Context, key scheduler.AppKey, typ string) {
	if err := c.store.EndOperation(ctx, v4.KindDeployment, key.Namespace, key.Name, typ); err != nil {
		c.log.Warn("end operation", "deployment", key.String(), "operation", typ, "err", err)
	}
}

// eventFor builds an event about the deployment.
func (c *DeploymentController) eventFor(key scheduler.AppKey, typ, reason, msg string) v4.Event {
	return v4.Event{Type: typ, Reason: reason, Kind: v4.KindDeployment, Namespace: key.Namespace, Name: key.Name, Message: msg}
}

// writeStatus stores st as the deployment's status when it changed. It writes with the
// resourceVersion it read, so a pause, resume or undo written in between is never lost
// (the conflict makes the controller look again).
func (c *DeploymentController) writeStatus(ctx context.Context, d *v4.Deployment, st v4.DeploymentStatus) error {
	old := d.Status
	old.Updated, st.Updated = time.Time{}, time.Time{}
	if equalStatus(old, st) {
		return nil
	}
	st.Updated = c.now().UTC()
	d.Status = st
	if err := c.store.Update(ctx, d, store.Raw{}); err != nil {
		return fmt.Errorf("update status of deployment %s/%s: %w", d.Metadata.Namespace, d.Metadata.Name, err)
	}
	return nil
}

// equalStatus compares statuses by their encoding (times included, as stored).
func equalStatus(a, b v4.DeploymentStatus) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
