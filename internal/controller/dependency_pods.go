package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/quota"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// depPass is one reconcile of one dependency: it carries out the pod plans and collects
// the status.
type depPass struct {
	c    *DependencyController
	key  depKey
	dep  *v4.Dependency
	tgs  []*v4.TaskGroup // every task group, as listed at the start of the pass
	now  time.Time
	next time.Duration
	// created are the indexes taken by pods created in this pass.
	created []int
	// unused replaces the controller's unused-since times of the dependency after the pass.
	unused   map[podKey]time.Time
	pods     []v4.DependencyPod
	problems []string
	// gate is the room left in the dependency's namespace quota, read at the pass's
	// first new pod (gateRead); nil: no resource quota.
	gate     *quotaGate
	gateRead bool
}

func (r *depPass) wake(d time.Duration) {
	if d > 0 && (r.next == 0 || d < r.next) {
		r.next = d
	}
}

// apply carries out one pod plan.
func (r *depPass) apply(ctx context.Context, p podPlan) error {
	c := r.c
	if p.refs == 0 && p.cur != nil && !p.unused.IsZero() {
		r.unused[p.key] = p.unused // kept for the next pass; keys in use or gone are dropped
	}
	if r.dep != nil {
		c.eventOnce("refs/"+r.key.String()+"/"+p.key.String(), fmt.Sprint(p.refs), r.key, v4.EventNormal, "References",
			fmt.Sprintf("pod for %s: %d dependent task groups", p.key, p.refs))
	}
	if p.reason != "" && len(p.remove) > 0 {
		names := make([]string, 0, len(p.remove))
		for _, tg := range p.remove {
			if tg.Spec.Desired != v4.DesiredStopped {
				names = append(names, tg.Metadata.Name)
			}
		}
		if len(names) > 0 {
			c.event(r.key, v4.EventNormal, p.why, fmt.Sprintf("pod for %s (%s): %s", p.key, strings.Join(names, ", "), p.reason))
		}
	}
	wait := c.pods.removeAll(ctx, p.remove)
	r.wake(wait)
	if p.event != "" && p.cur != nil {
		c.eventOnce("pod/"+p.cur.Metadata.Name, p.eventReason, r.key, v4.EventWarning, p.eventReason, p.event)
	}
	if p.wake > 0 {
		r.wake(p.wake)
	}
	st := v4.DependencyPod{Node: p.key.node, Policy: p.key.policy(), Scope: p.key.scope, RefCount: p.refs}
	if p.refs == 0 {
		st.LastUsed = p.unused.UTC()
	}
	switch {
	case p.cur != nil:
		r.observe(p.cur)
		st.TaskGroup, st.Phase = p.cur.Metadata.Name, orStaging(p.cur.Status.Phase)
	case p.create && wait == 0:
		tg, err := r.create(ctx, p)
		if err != nil {
			return err
		}
		if tg != nil {
			st.TaskGroup, st.Phase = tg.Metadata.Name, v4.StatusStaging
		}
	case len(p.remove) > 0:
		st.Phase = v4.StatusKilling
	}
	if p.create && wait > 0 {
		r.wake(time.Second) // start the new pod once the old one is gone
	}
	if r.dep != nil && (p.refs > 0 || st.TaskGroup != "" || st.Phase != "") {
		r.pods = append(r.pods, st)
	}
	return nil
}

func orStaging(phase string) string {
	if phase == "" {
		return v4.StatusStaging
	}
	return phase
}

// observe records an event when a pod's phase changed since last seen.
func (r *depPass) observe(tg *v4.TaskGroup) {
	phase := orStaging(tg.Status.Phase)
	key := phaseKey(tg)
	prev, seen := r.c.lookup(key)
	r.c.swap(key, phase)
	if seen && prev == phase || !seen && phase == v4.StatusStaging {
		return
	}
	typ := v4.EventNormal
	if phase == v4.StatusFailed || phase == v4.StatusLost || phase == v4.StatusError {
		typ = v4.EventWarning
	}
	msg := fmt.Sprintf("pod %s on %s is %s", tg.Metadata.Name, tg.Spec.Node, phase)
	if tg.Status.Message != "" {
		msg += ": " + tg.Status.Message
	}
	r.c.event(r.key, typ, "Pod"+phase, msg)
}

// create places a pod for p.key through the scheduler, restricted to the key's node, so
// its resources and ports are accounted like any task group's, and writes it.
func (r *depPass) create(ctx context.Context, p podPlan) (*v4.TaskGroup, error) {
	c := r.c
	idx := r.freeIndex()
	req, err := scheduler.RequestFor(r.dep, []int{idx})
	if err != nil {
		r.problems = append(r.problems, err.Error())
		return nil, nil
	}
	req.Node = p.key.node
	addTakenPorts(req, p.taken)
	var res scheduler.Result
	opts := scheduler.Options{Strategy: c.opts.Placement, Cluster: c.opts.Cluster}
	c.feed.With(func(s *scheduler.Snapshot) { res = c.opts.Metrics.place(s, req, opts) })
	id := "unplaced/" + r.key.String() + "/" + p.key.String()
	if len(res.Placements) == 0 {
		msg := fmt.Sprintf("pod for %s cannot be placed: %s", p.key, res.Reason)
		c.eventOnce(id, msg, r.key, v4.EventWarning, "FailedScheduling", msg)
		r.problems = append(r.problems, msg)
		r.wake(unplacedRetry)
		return nil, nil
	}
	c.forget(id)
	tg := r.newTaskGroup(req, res.Placements[0], p)
	// release gives back the room the snapshot reserved for tg on its node.
	release := func() {
		c.feed.With(func(s *scheduler.Snapshot) { s.RemoveTaskGroup(tg.Metadata.Namespace, tg.Metadata.Name) })
	}
	quotaID := "quota/" + r.key.String() + "/" + p.key.String()
	if err := r.withinQuota(ctx, tg); err != nil {
		release()
		msg := fmt.Sprintf("pod for %s waits for room in the namespace's quota: %v", p.key, err)
		c.eventOnce(quotaID, msg, r.key, v4.EventWarning, ReasonQuotaExceeded, msg)
		r.problems = append(r.problems, msg)
		r.wake(unplacedRetry)
		return nil, nil
	}
	c.forget(quotaID)
	if err := c.store.Create(r.gate.fenced(ctx), tg, store.Raw{}); err != nil {
		release()
		if errors.Is(err, store.ErrQuotaFence) { // another write of the namespace went first: count again
			r.gate, r.gateRead = nil, false
			r.wake(quotaRecount)
			return nil, nil
		}
		return nil, fmt.Errorf("create dependency pod %s: %w", tg.Metadata.Name, err)
	}
	c.pods.wrote(tg) // the next pass reads it from the shared cache, not a cache behind it
	r.created = append(r.created, idx)
	c.event(r.key, v4.EventNormal, "Scheduled", fmt.Sprintf("pod for %s started as %s (%d dependent task groups)", p.key, tg.Metadata.Name, p.refs))
	return tg, nil
}

// withinQuota takes tg's room in the dependency's namespace quota: its pods count there
// while they run (docs/policy.md, "Counting"), and a pod that would pass the quota
// waits, named in the status and a QuotaExceeded event, as a daemonset's node does.
func (r *depPass) withinQuota(ctx context.Context, tg *v4.TaskGroup) error {
	if !r.gateRead {
		gate, err := r.c.pods.quotaGate(ctx, r.key.Namespace)
		if err != nil {
			return err
		}
		r.gate, r.gateRead = gate, true
	}
	return r.gate.take(quota.TaskGroup(tg))
}

// freeIndex is the smallest index no pod of the dependency holds: pods get readable IDs
// ("0.logagent.infra.berth.{unixNano}", "1.logagent...") and keep them small.
func (r *depPass) freeIndex() int {
	used := map[int]bool{}
	for _, tg := range r.tgs {
		if tg.Spec.Owner.Kind == v4.KindDependency && tg.Metadata.Namespace == r.key.Namespace && tg.Spec.Owner.Name == r.key.Name {
			used[tg.Spec.Index] = true
		}
	}
	for _, i := range r.created {
		used[i] = true
	}
	i := 0
	for used[i] {
		i++
	}
	return i
}

func (r *depPass) newTaskGroup(req *scheduler.Request, pl scheduler.Placement, p podPlan) *v4.TaskGroup {
	d := r.dep
	grace := 1
	if d.KillPolicy != nil && d.KillPolicy.GracePeriod > 1 {
		grace = d.KillPolicy.GracePeriod
	}
	ann := map[string]string{depPolicyAnnotation: p.key.policy()}
	if p.key.scope != "" {
		ann[depScopeAnnotation] = p.key.scope
	}
	tg := &v4.TaskGroup{
		TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
		Metadata: v4.ObjectMeta{Name: pl.Name, Namespace: r.key.Namespace, Labels: req.Labels, Annotations: ann},
		Spec: v4.TaskGroupSpec{
			Owner: v4.OwnerRef{Kind: v4.KindDependency, Name: r.key.Name}, Index: pl.Index, Node: pl.Node,
			Labels: req.Labels, Resources: pl.Resources, Overhead: pl.Overhead, Ports: pl.Ports, GPUs: pl.GPUs, Attributes: pl.Attributes,
			Template: d.Spec.Template, KillGracePeriod: grace, OwnerVersion: d.Metadata.ResourceVersion,
			Desired: v4.DesiredRunning,
		},
		Status: v4.TaskGroupStatus{Phase: v4.StatusStaging, Updated: r.now},
	}
	if p.attempt > 0 {
		tg.Spec.ReschedTimes, tg.Spec.LastRescheduled = p.attempt, r.now
	}
	tg.Spec.PortRetries = p.portRetries
	return tg
}

// status is the dependency's status after the pass.
func (r *depPass) status() v4.DependencyStatus {
	st := v4.DependencyStatus{Pods: r.pods}
	refs := 0
	for _, p := range r.pods {
		refs += p.RefCount
	}
	st.Message = fmt.Sprintf("%d pods, %d dependent task groups", len(r.pods), refs)
	if len(r.problems) > 0 {
		st.Message += "; " + strings.Join(r.problems, "; ")
	}
	return st
}

// updateStatus writes the dependency's status when it changed, retrying on conflicts
// with users' writes.
func (c *DependencyController) updateStatus(ctx context.Context, key depKey, st v4.DependencyStatus) error {
	return retryStatusWrite("dependency "+key.String(), func() error {
		obj, err := c.store.Get(ctx, v4.KindDependency, key.Namespace, key.Name)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("get dependency %s: %w", key, err)
		}
		dep := obj.(*v4.Dependency)
		if sameDependencyStatus(dep.Status, st) {
			return nil
		}
		st.Updated = time.Now().UTC()
		dep.Status = st
		if err := c.store.Update(ctx, dep, store.Raw{}); err != nil {
			return fmt.Errorf("update status of dependency %s: %w", key, err)
		}
		return nil
	})
}

// sameDependencyStatus compares statuses, ignoring when they were written.
func sameDependencyStatus(a, b v4.DependencyStatus) bool {
	return a.Message == b.Message && slices.EqualFunc(a.Pods, b.Pods, func(x, y v4.DependencyPod) bool {
		return x.Node == y.Node && x.Policy == y.Policy && x.Scope == y.Scope && x.TaskGroup == y.TaskGroup &&
			x.Phase == y.Phase && x.RefCount == y.RefCount && x.LastUsed.Equal(y.LastUsed)
	})
}
