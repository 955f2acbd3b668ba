package controller

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/workflow/engine"
)

// WorkflowResumeAnnotation asks the controller to resume Suspend nodes: "*" every one
// that waits, else node IDs or names separated by commas (`berth workflow resume`).
// The controller removes it once it resumed them.
const WorkflowResumeAnnotation = "berth.io/workflow-resume"

// workflowUIDAnnotation is on a step's task group: the UID of the workflow that made it,
// so that the task groups of a deleted workflow are told from those of a new one of the
// same name (and removed).
const workflowUIDAnnotation = "berth.io/workflow-uid"

// wfPass is one reconcile of one workflow.
type wfPass struct {
	c   *WorkflowController
	key scheduler.AppKey
	wf  *v4.Workflow
	tgs map[string]*v4.TaskGroup // by name
	now time.Time

	st    v4.WorkflowStatus
	nodes map[string]v4.WfNodeStatus
	// before are the nodes as read, for the phase changes; changed the IDs to write.
	before  map[string]v4.WfNodeStatus
	changed map[string]bool
	next    time.Duration
	resumed string // the resume annotation's value, handled
	// waitWhy says why steps the engine started wait: for room in the namespace's quota
	// (quota_gate.go), else for a node. It is the status message, unless the plan has
	// one of its own.
	waitWhy string
	// gate is the room left in the namespace's quota; its fence goes with the steps'
	// writes. nil: no resource quota.
	gate *quotaGate
	// nominated are the steps waiting for their preemption's victims (workflow_preempt.go).
	nominated []v4.Nomination
}

func newWfPass(c *WorkflowController, key scheduler.AppKey, wf *v4.Workflow, tgs []*v4.TaskGroup) *wfPass {
	p := &wfPass{c: c, key: key, wf: wf, tgs: make(map[string]*v4.TaskGroup, len(tgs)), now: time.Now().UTC(),
		st: wf.Status, changed: map[string]bool{}}
	for _, tg := range tgs {
		p.tgs[tg.Metadata.Name] = tg
	}
	return p
}

func (p *wfPass) wake(d time.Duration) {
	d = max(d, time.Millisecond)
	if p.next == 0 || d < p.next {
		p.next = d
	}
}

// run takes the workflow one step on and writes what changed.
func (p *wfPass) run(ctx context.Context) error {
	p.dropForeign(ctx)
	if v4.WfPhaseFinished(p.st.Phase) {
		// Nothing to write: a pass over one of 10,000 finished workflows (a resync)
		// costs a look at its task groups (workflow_gc.go).
		return p.finished(ctx)
	}
	if err := p.loadNodes(ctx); err != nil {
		return err
	}
	p.collectSteps(ctx)
	if p.st.StartedAt.IsZero() {
		if msg := p.c.namespaceFull(p.wf); msg != "" {
			p.st.Phase, p.st.Message = v4.WfPending, msg
			p.wake(wfPendingRetry)
			return p.write(ctx)
		}
		p.st.StartedAt, p.st.Phase = p.now, v4.WfRunning
	}
	p.fromTaskGroups()
	p.resume()
	refs, err := p.c.templateRefs(ctx, p.wf)
	if err != nil {
		p.st.Message = err.Error()
		p.wake(wfPendingRetry)
		return p.write(ctx)
	}
	plan := engine.Next(engine.Input{UID: p.st.UID, Name: p.wf.Metadata.Name, Namespace: p.wf.Metadata.Namespace,
		Spec: &p.wf.Spec, Refs: refs, Nodes: p.nodes, StartedAt: p.st.StartedAt, Now: p.now,
		MaxStarts: wfMaxStarts, Shutdown: p.wf.Spec.Shutdown})
	for _, n := range plan.Updates {
		p.set(n)
	}
	p.start(ctx, plan.Start)
	p.stop(ctx, plan.Stop)
	p.st.Phase, p.st.Message = plan.Phase, cmp.Or(plan.Message, p.waitWhy)
	if v4.WfPhaseFinished(plan.Phase) {
		p.st.FinishedAt = p.now
		p.stopLeftovers(ctx)
	}
	p.keepNominations() // workflow_preempt.go
	if !plan.Requeue.IsZero() {
		p.wake(plan.Requeue.Sub(p.now))
	}
	if plan.More {
		p.wake(time.Millisecond)
	}
	return p.write(ctx)
}

// dropForeign removes the task groups of an earlier workflow of the same name, deleted
// and created again before its steps were removed.
func (p *wfPass) dropForeign(ctx context.Context) {
	var foreign []*v4.TaskGroup
	for name, tg := range p.tgs {
		if uid, ok := tg.Metadata.Annotations[workflowUIDAnnotation]; ok && uid != p.st.UID {
			foreign = append(foreign, tg)
			delete(p.tgs, name)
		}
	}
	if len(foreign) > 0 {
		p.wake(p.c.removeAll(ctx, foreign))
	}
}

// set records a node as changed by this pass.
func (p *wfPass) set(n v4.WfNodeStatus) {
	p.nodes[n.ID] = n
	p.changed[n.ID] = true
}

// fromTaskGroups sets the phase and outputs of the Pod nodes that run from their task
// groups.
func (p *wfPass) fromTaskGroups() {
	for _, id := range slices.Sorted(maps.Keys(p.nodes)) {
		n := p.nodes[id]
		if n.Type != v4.WfNodePod || n.TaskGroup == "" || v4.WfPhaseFinished(n.Phase) {
			continue
		}
		tg := p.tgs[n.TaskGroup]
		if tg == nil {
			n.Phase, n.Message, n.FinishedAt = v4.WfError, fmt.Sprintf("its task group %s is gone", n.TaskGroup), p.now
			p.set(n)
			continue
		}
		if u, ok := p.stepOutcome(n, tg); ok {
			p.set(u)
		}
	}
}

// stepOutcome is a Pod node as its task group says: Running once placed and started;
// Succeeded when the main task exited 0 and the agent collected the outputs; Failed on
// a non-zero exit or a collection error; Error when the step could not run.
func (p *wfPass) stepOutcome(n v4.WfNodeStatus, tg *v4.TaskGroup) (v4.WfNodeStatus, bool) {
	phase := tg.Status.Phase
	if !v4.Terminal(phase) && phase != v4.StatusLost {
		if phase == v4.StatusRunning && n.Phase == v4.WfPending {
			n.Phase = v4.WfRunning
			return n, true
		}
		return n, false
	}
	ended := tg.Status.FinishedAt
	if ended.IsZero() {
		ended = tg.Status.Updated
	}
	n.FinishedAt = ended
	res := tg.Status.Step
	code, ran := mainExit(tg)
	switch {
	case phase == v4.StatusLost:
		n.Phase, n.Message = v4.WfError, fmt.Sprintf("its node %s was lost", tg.Spec.Node)
	case evicted(tg):
		// The agent took the node's room back (a revocable step, or a scratch volume
		// over its limit): a failure the step's retryStrategy may retry.
		n.Phase, n.Message = v4.WfFailed, tg.Status.Message
	case tg.Spec.Desired == v4.DesiredStopped:
		n.Phase, n.Message = v4.WfFailed, "stopped"
	case mainOOMKilled(tg):
		// Argo's words for it: a failure (retried per retryStrategy), not an Error,
		// whatever the agent collected after the kill.
		n.Phase, n.Message = v4.WfFailed, fmt.Sprintf("OOMKilled (exit code %d)", oomExitCode)
	case res != nil && res.Error != "" && ran:
		n.Phase, n.Message = v4.WfFailed, res.Error
	case res != nil && res.Error != "" || !ran:
		n.Phase, n.Message = v4.WfError, firstOf(stepError(res), tg.Status.Message, "the step could not run")
	case code != 0:
		n.Phase, n.Message = v4.WfFailed, fmt.Sprintf("exit code %d", code)
	case needsCollection(tg.Spec.Step) && (res == nil || !res.Collected):
		if wait := p.c.collectWait - p.now.Sub(ended); wait > 0 {
			p.wake(wait)
			return n, false
		}
		n.Phase, n.Message = v4.WfError, "the agent did not report the step's outputs"
	default:
		n.Phase = v4.WfSucceeded
	}
	n.Outputs = stepOutputsOf(res, code, ran, tg.Spec.Step)
	return n, true
}

// evicted reports whether the agent evicted tg: it ended Failed with the executor's
// "evicted: ..." message (docs/policy.md, "Eviction").
func evicted(tg *v4.TaskGroup) bool {
	return tg.Status.Phase == v4.StatusFailed && strings.HasPrefix(tg.Status.Message, "evicted: ")
}

func stepError(r *v4.StepResult) string {
	if r == nil {
		return ""
	}
	return r.Error
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// mainExit is the main task's exit code, and whether it ran to an exit at all.
func mainExit(tg *v4.TaskGroup) (int, bool) {
	if r := tg.Status.Step; r != nil && r.Collected {
		// -1: the main task never ran to an exit (an input failed to stage, a kill).
		return r.ExitCode, r.ExitCode != -1
	}
	if t := mainTask(tg); t != nil {
		ran := t.Status == v4.StatusFinish || t.Status == v4.StatusFailed || t.Info.ExitCode != 0
		return t.Info.ExitCode, ran
	}
	return 0, tg.Status.Phase == v4.StatusFinish
}

// mainTask is the status of the step's main task, nil before the agent reported it.
func mainTask(tg *v4.TaskGroup) *v4.TaskStatus {
	main := stepMainTask
	if io := tg.Spec.Step; io != nil {
		main = io.Main
	}
	for i := range tg.Status.Tasks {
		if tg.Status.Tasks[i].Name == main {
			return &tg.Status.Tasks[i]
		}
	}
	return nil
}

// oomExitCode is the exit code of a process the kernel's OOM killer killed (128+SIGKILL).
const oomExitCode = 137

// mainOOMKilled reports whether the driver saw the step's main task killed by the
// kernel's OOM killer (its memory limit).
func mainOOMKilled(tg *v4.TaskGroup) bool {
	t := mainTask(tg)
	return t != nil && t.Info.OOMKilled
}

// stepOutputsOf are a node's outputs from what the agent collected.
func stepOutputsOf(r *v4.StepResult, code int, ran bool, io *v4.StepIO) *v4.WfOutputs {
	if r == nil && !ran {
		return nil
	}
	o := &v4.WfOutputs{}
	if ran {
		o.ExitCode = &code
	}
	if r != nil {
		o.Parameters, o.Result = r.Parameters, trimmedOut(r.Result)
		if io != nil && io.StdoutParameter != "" {
			o.Parameters = slices.Clone(o.Parameters)
			for i, p := range o.Parameters {
				if p.Name == io.StdoutParameter {
					o.Parameters[i].Value = trimmedOut(p.Value)
				}
			}
		}
		for _, a := range r.Artifacts {
			o.Artifacts = append(o.Artifacts, v4.WfArtifact{Name: a.Name,
				Repository: &v4.WfArtifactRepositoryRef{Name: a.Repository, Key: a.Key}})
		}
	}
	return o
}

// trimmedOut is standard output as a value: without its last newline, as Argo's
// outputs.result, so that "{{steps.x.outputs.result}}" fits in a command line.
func trimmedOut(s *string) *string {
	if s == nil {
		return nil
	}
	v := strings.TrimSuffix(strings.TrimSuffix(*s, "\n"), "\r")
	return &v
}

// resume marks the Suspend nodes the resume annotation names Succeeded.
func (p *wfPass) resume() {
	v, ok := p.wf.Metadata.Annotations[WorkflowResumeAnnotation]
	if !ok {
		return
	}
	p.resumed = v
	want := map[string]bool{}
	for _, s := range strings.Split(v, ",") {
		want[strings.TrimSpace(s)] = true
	}
	for _, id := range slices.Sorted(maps.Keys(p.nodes)) {
		n := p.nodes[id]
		if n.Type != v4.WfNodeSuspend || v4.WfPhaseFinished(n.Phase) {
			continue
		}
		if want["*"] || want[n.ID] || want[n.Name] || want[n.DisplayName] {
			n.Phase, n.FinishedAt, n.Message = v4.WfSucceeded, p.now, "resumed"
			p.set(n)
		}
	}
}

// stop asks the task groups of the nodes the engine stopped (past a deadline, or the
// workflow stopped) to stop.
func (p *wfPass) stop(ctx context.Context, ids []string) {
	for _, id := range ids {
		tg := p.tgs[p.nodes[id].TaskGroup]
		if tg == nil || tg.Spec.Desired == v4.DesiredStopped || v4.Terminal(tg.Status.Phase) {
			continue
		}
		if err := p.c.markStopped(ctx, tg, false); err != nil {
			p.c.log.Warn("stop workflow step", "taskgroup", tg.Metadata.Name, "err", err)
			p.wake(wfPendingRetry)
		}
	}
}

// stopLeftovers stops the task groups of a finished workflow that still run.
func (p *wfPass) stopLeftovers(ctx context.Context) {
	for _, name := range slices.Sorted(maps.Keys(p.tgs)) {
		tg := p.tgs[name]
		if !activeRun(tg) || tg.Spec.Desired == v4.DesiredStopped {
			continue
		}
		if err := p.c.markStopped(ctx, tg, false); err != nil {
			p.c.log.Warn("stop workflow step", "taskgroup", name, "err", err)
			p.wake(wfPendingRetry)
		}
	}
}
