package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// A step's task group is its record only until the step's node status holds the record
// (phase, times, exit code, outputs; its log is the main-logs artifact): the podGC
// strategy then deletes it, by default once the workflow ended, so that a cluster
// retaining thousands of finished workflows holds none of their task groups in etcd or
// in the servers' caches. Task groups are deleted only for nodes whose end was read
// from the store: a leader that takes over never finds a running step without its task
// group.

// finished is the pass over a finished workflow: it stops what still runs, deletes the
// steps' task groups its podGC strategy lets go, and the workflow once its ttlStrategy
// says so.
func (p *wfPass) finished(ctx context.Context) error {
	if p.expire(ctx) {
		return nil
	}
	if len(p.tgs) == 0 {
		p.archive() // workflow_archive.go
		return nil
	}
	spec := &p.wf.Spec
	switch spec.PodGCStrategy() {
	case v4.WfPodGCOnWorkflowCompletion, v4.WfPodGCOnPodCompletion:
		p.collectAll(ctx)
		return nil
	case v4.WfPodGCOnWorkflowSuccess:
		if p.st.Phase == v4.WfSucceeded {
			p.collectAll(ctx)
			return nil
		}
	case v4.WfPodGCOnPodSuccess:
		if err := p.loadStoredNodes(ctx); err != nil {
			return err
		}
		p.collectSteps(ctx)
	}
	p.stopLeftovers(ctx) // what still runs after the end (an exit handler's sidecar)
	return nil
}

// loadStoredNodes reads a finished workflow's nodes: its cached copy has none
// (workflow_keep.go), so its stored object is read first.
func (p *wfPass) loadStoredNodes(ctx context.Context) error {
	o, err := p.c.store.Get(ctx, p.key.Kind, p.key.Namespace, p.key.Name)
	if err != nil {
		return fmt.Errorf("read workflow %s: %w", p.key, err)
	}
	if wf, ok := o.(*v4.Workflow); ok && wf.Status.UID == p.st.UID {
		p.st.Nodes, p.st.NodesOffloaded = wf.Status.Nodes, wf.Status.NodesOffloaded
	}
	return p.loadNodes(ctx)
}

// collectAll deletes every task group of the finished workflow once its podGC delay
// passed (stopping first what still runs).
func (p *wfPass) collectAll(ctx context.Context) {
	if d := p.st.FinishedAt.Add(p.wf.Spec.PodGCDelay()).Sub(p.now); d > 0 {
		p.stopLeftovers(ctx)
		p.wake(d)
		return
	}
	tgs := make([]*v4.TaskGroup, 0, len(p.tgs))
	for _, name := range slices.Sorted(maps.Keys(p.tgs)) {
		tgs = append(tgs, p.tgs[name])
	}
	if d := p.c.removeAll(ctx, tgs); d > 0 {
		p.wake(d)
	}
}

// collectSteps deletes the task groups of the steps that ended, as read from the store,
// when the strategy is one per step (OnPodCompletion, OnPodSuccess for succeeded ones).
func (p *wfPass) collectSteps(ctx context.Context) {
	strategy := p.wf.Spec.PodGCStrategy()
	if len(p.tgs) == 0 || strategy != v4.WfPodGCOnPodCompletion && strategy != v4.WfPodGCOnPodSuccess {
		return
	}
	delay := p.wf.Spec.PodGCDelay()
	var done []*v4.TaskGroup
	for _, id := range slices.Sorted(maps.Keys(p.before)) {
		n := p.before[id]
		tg := p.tgs[n.TaskGroup]
		if n.Type != v4.WfNodePod || tg == nil || !v4.WfPhaseFinished(n.Phase) {
			continue
		}
		if strategy == v4.WfPodGCOnPodSuccess && n.Phase != v4.WfSucceeded {
			continue
		}
		if d := n.FinishedAt.Add(delay).Sub(p.now); d > 0 {
			p.wake(d)
			continue
		}
		done = append(done, tg)
		delete(p.tgs, n.TaskGroup)
	}
	if d := p.c.removeAll(ctx, done); d > 0 {
		p.wake(d)
	}
}

// expire deletes the finished workflow once its ttlStrategy says so, and reports
// whether it did; else it wakes the pass then. Its deletion queues it again, and that
// pass removes its task groups and offloaded nodes (its artifacts are collected as
// those of a workflow that is gone).
func (p *wfPass) expire(ctx context.Context) bool {
	ttl, ok := p.wf.Spec.TTLStrategy.TTL(p.st.Phase)
	if !ok {
		return false
	}
	if d := p.st.FinishedAt.Add(ttl).Sub(p.now); d > 0 {
		p.wake(d)
		return false
	}
	m := p.wf.Metadata
	if _, err := p.c.store.Delete(ctx, v4.KindWorkflow, m.Namespace, m.Name, m.ResourceVersion); err != nil {
		if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict) {
			p.c.log.Warn("delete expired workflow", "workflow", p.key, "err", err)
			p.wake(wfPendingRetry)
		}
		return false // gone already, or changed (a retry): the next pass looks again
	}
	p.c.event(p.key, v4.EventNormal, "Expired", fmt.Sprintf("workflow %s/%s deleted %s after it %s (ttlStrategy)",
		m.Namespace, m.Name, ttl, p.st.Phase))
	return true
}
