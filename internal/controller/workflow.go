package controller

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store"
)

// WorkflowController runs workflows (docs/workflows.md, "Running workflows"). Each pass
// reads a workflow, its workflowtemplates and its nodes, sets the Pod nodes from their
// task groups, asks the engine (internal/workflow/engine) what comes next, and acts: it
// creates a task group for each step to start (placed by the scheduler, named after
// the node so that a new leader adopts it instead of starting it again), stops those
// past a deadline and writes the nodes and the workflow's status. Like a job's runs, a
// step's task group is never restarted in place, and is deleted once the step's node
// status holds its record, as the workflow's podGC says (workflow_gc.go); the other
// controllers leave task groups owned by a workflow alone.
type WorkflowController struct {
	base
	opts  Options
	queue *queue[scheduler.AppKey]
	wfs   *cacheView
	// nodes remembers the offloaded nodes of the workflows this term wrote, by key:
	// a pass over a 10,000-node workflow reads them from etcd only when the object
	// changed under it (another writer: a retry, a new leader).
	mu    sync.Mutex
	nodes map[scheduler.AppKey]*nodeMemo
	// collectWait is how long a step that ended waits for the agent's collection;
	// inlineBytes the nodes' size past which they are offloaded.
	collectWait time.Duration
	inlineBytes int
	// archiver archives the finished workflows the passes queue (workflow_archive.go).
	archiver *wfArchiver
}

// nodeMemo is the offloaded nodes of one workflow as of the object version rv.
type nodeMemo struct {
	uid, rv string
	nodes   map[string]v4.WfNodeStatus
}

// Bounds of the work of one pass, so a workflow of 10,000 steps moves in bounded steps
// (each pass starts at most wfMaxStarts steps and runs again at once when more wait).
const (
	wfMaxStarts = 500
	// WorkflowInlineBytes is the size of the nodes' JSON past which they are offloaded
	// (a workflow the server restores from the archive keeps them so too).
	WorkflowInlineBytes = 256 << 10
	// wfCollectWait is how long a step's outcome waits for the agent to report what it
	// collected after the main task ended, before the step fails with an error.
	wfCollectWait  = 2 * time.Minute
	wfPendingRetry = 2 * time.Second
)

// NewWorkflowController builds the controller; Run drives it.
func NewWorkflowController(st *store.Store, f *feed.Feed, opts Options) *WorkflowController {
	opts = opts.withDefaults()
	b := newBase(st, f, opts, opts.Logger.With("controller", "workflow"))
	c := &WorkflowController{base: b, opts: opts, queue: newQueue[scheduler.AppKey](),
		wfs: &cacheView{cache: b.cache(v4.KindWorkflow)}, nodes: map[scheduler.AppKey]*nodeMemo{}, collectWait: wfCollectWait, inlineBytes: WorkflowInlineBytes}
	c.archiver = &wfArchiver{c: c}
	c.queue.prio = c.wfs.priorityOf // higher priorities are reconciled, and their steps placed, first
	return c
}

// Run watches workflows and task groups and reconciles until ctx ends.
func (c *WorkflowController) Run(ctx context.Context) error {
	l := c.ownerLoop(v4.KindWorkflow, "workflow", c.opts.Metrics, c.queue, c.wfs, c.enqueueObject, c.reconcile)
	l.start = func(ctx context.Context, spawn func(func())) error {
		spawn(func() { c.archiver.run(ctx) })
		return c.restoreNominations(ctx) // workflow_preempt.go
	}
	return l.run(ctx)
}

func (c *WorkflowController) enqueueObject(o v4.Object) {
	m := o.GetMeta()
	c.queue.Add(scheduler.AppKey{Kind: v4.KindWorkflow, Namespace: m.Namespace, Name: m.Name})
	if wf, ok := o.(*v4.Workflow); ok && v4.WfPhaseFinished(wf.Status.Phase) && c.opts.WorkflowsPerNamespace > 0 {
		c.enqueueWaiting(m.Namespace) // a slot of the namespace's limit may be free
	}
}

// enqueueWaiting queues the workflows of ns that wait for the namespace's limit.
func (c *WorkflowController) enqueueWaiting(ns string) {
	objs, _, err := c.wfs.cache.List("", "")
	if err != nil {
		return
	}
	for _, o := range objs {
		wf := o.(*v4.Workflow)
		if wf.Metadata.Namespace == ns && wf.Status.StartedAt.IsZero() {
			c.queue.Add(scheduler.AppKey{Kind: v4.KindWorkflow, Namespace: ns, Name: wf.Metadata.Name})
		}
	}
}

// workflowOf returns the workflow of key (a copy whose status may be set), or nil when
// it is gone.
func (c *WorkflowController) workflowOf(ctx context.Context, key scheduler.AppKey) (*v4.Workflow, error) {
	return objectOf[v4.Workflow](ctx, c.store, c.wfs, key)
}

// reconcile brings one workflow a step on and returns when to look again.
func (c *WorkflowController) reconcile(ctx context.Context, key scheduler.AppKey) (time.Duration, error) {
	wf, err := c.workflowOf(ctx, key)
	if err != nil {
		return 0, err
	}
	tgs, err := c.tgs.ofOwner(ctx, key.Namespace, key.Kind, key.Name)
	if err != nil {
		return 0, err
	}
	if wf == nil { // deleted: stop and remove every step, and the offloaded nodes
		c.guard.forget(key.Kind, key.Namespace, key.Name)
		return c.removeWorkflow(ctx, key, tgs)
	}
	// A finished workflow starts nothing (and the cache keeps only part of it:
	// workflow_keep.go), so only a running one is checked.
	if v4.WfPhaseFinished(wf.Status.Phase) {
		c.guard.forget(key.Kind, key.Namespace, key.Name)
	} else if msg := c.guard.check(wf); msg != "" { // what runs stays; nothing starts
		st := wf.Status
		st.Message = msg
		return 0, c.writeStatus(ctx, key, st, nil)
	}
	if wf.Status.UID == "" {
		// The UID is in every node's ID: it is written before any step starts, so a
		// leader that takes over computes the same IDs.
		st := wf.Status
		st.UID, st.Phase = newUID(), v4.WfPending
		return time.Millisecond, c.assignUID(ctx, key, st)
	}
	p := newWfPass(c, key, wf, tgs)
	if err := p.run(ctx); err != nil {
		return 0, err
	}
	return p.next, nil
}

// removeWorkflow stops and deletes a deleted workflow's task groups and its offloaded
// nodes, and drops its steps' holds. Its artifacts stay: the artifact store collects
// those of workflows that are gone (by name and UID).
func (c *WorkflowController) removeWorkflow(ctx context.Context, key scheduler.AppKey, tgs []*v4.TaskGroup) (time.Duration, error) {
	c.mu.Lock()
	delete(c.nodes, key)
	c.mu.Unlock()
	c.feed.With(func(s *scheduler.Snapshot) { s.ClearNominations(key) })
	next := c.removeAll(ctx, tgs)
	if len(tgs) == 0 {
		if err := c.store.DeleteWorkflowNodes(ctx, key.Namespace, key.Name, ""); err != nil {
			return 0, err
		}
	}
	return next, nil
}

func newUID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b)
}

// writeStatus writes the workflow's status (with the nodes to offload, when it has
// them) unless it is the same, and records the workflow's phase change.
func (c *WorkflowController) writeStatus(ctx context.Context, key scheduler.AppKey, st v4.WorkflowStatus, memo *nodeMemo) error {
	return writeStored(ctx, c.store, key, func(wf *v4.Workflow) error {
		if st.UID != wf.Status.UID {
			// Another writer changed it, or it is a new workflow of the same name (a
			// pass that read the one deleted must not give the new one its status):
			// the next pass sees it.
			return nil
		}
		if sameStatusJSON(wf.Status, st) {
			c.remember(key, memo, wf.Metadata.ResourceVersion)
			return nil
		}
		return c.storeStatus(ctx, key, wf, st, memo)
	})
}

// assignUID writes a new workflow's first status, with its UID, unless it has one.
func (c *WorkflowController) assignUID(ctx context.Context, key scheduler.AppKey, st v4.WorkflowStatus) error {
	return writeStored(ctx, c.store, key, func(wf *v4.Workflow) error {
		if wf.Status.UID != "" {
			return nil
		}
		return c.storeStatus(ctx, key, wf, st, nil)
	})
}

// storeStatus writes wf (read from the store, its other changes made) with status st,
// and records the write: the cache's floor, the offloaded nodes as of it, and the
// workflow's phase change.
func (c *WorkflowController) storeStatus(ctx context.Context, key scheduler.AppKey, wf *v4.Workflow, st v4.WorkflowStatus, memo *nodeMemo) error {
	old := wf.Status
	wf.Status = st
	if err := c.store.Update(ctx, wf, store.Raw{}); err != nil {
		return err
	}
	c.opts.Metrics.statusWritten("workflow")
	c.wfs.wrote(wf.Metadata.ResourceVersion)
	c.remember(key, memo, wf.Metadata.ResourceVersion)
	if old.Phase != st.Phase {
		c.workflowPhase(key, st)
	}
	return nil
}

// remember records the offloaded nodes as of the workflow's version rv.
func (c *WorkflowController) remember(key scheduler.AppKey, memo *nodeMemo, rv string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if memo == nil {
		delete(c.nodes, key)
		return
	}
	memo.rv = rv
	c.nodes[key] = memo
}

// workflowPhase records a workflow's phase change: an event (which notify callbacks
// follow: WorkflowSucceeded, WorkflowFailed) and the metric.
func (c *WorkflowController) workflowPhase(key scheduler.AppKey, st v4.WorkflowStatus) {
	c.opts.Metrics.workflowPhase("workflow", st.Phase)
	typ, reason := v4.EventNormal, "Workflow"+st.Phase
	if st.Phase == v4.WfFailed || st.Phase == v4.WfError {
		typ = v4.EventWarning
	}
	msg := fmt.Sprintf("workflow %s/%s is %s", key.Namespace, key.Name, st.Phase)
	if st.Progress != "" {
		msg += " (" + st.Progress + " steps)"
	}
	if st.Message != "" {
		msg += ": " + st.Message
	}
	c.event(key, typ, reason, msg)
}
