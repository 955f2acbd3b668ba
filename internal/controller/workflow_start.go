package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/workflow/engine"
)

// wfStepPlan is a step to start: its pod, StepIO and placement request.
type wfStepPlan struct {
	st  engine.Start
	io  *v4.StepIO
	req *scheduler.Request
	pod *v4.PodTemplate
}

// plan builds the pods and requests of the steps to start; a step whose pod cannot be
// built fails with an error.
func (p *wfPass) plan(starts []engine.Start) []wfStepPlan {
	app := scheduler.AppKey{Kind: v4.KindWorkflow, Namespace: p.wf.Metadata.Namespace, Name: p.wf.Metadata.Name}
	var todo []wfStepPlan
	for _, st := range starts {
		pod, io, err := stepPod(p.wf, st, p.nodes[st.NodeID].Inputs)
		var req *scheduler.Request
		if err == nil {
			c := stepConstraint(p.wf, st)
			if err = v4.CheckConstraint("constraint", c); err == nil {
				req, err = scheduler.RequestForTemplate(app, &p.wf.Metadata, &p.wf.Spec.Scheduling, pod, c, []int{0})
			}
		}
		if err != nil {
			n := p.nodes[st.NodeID]
			n.Phase, n.Message, n.FinishedAt = v4.WfError, err.Error(), p.now
			p.set(n)
			continue
		}
		todo = append(todo, wfStepPlan{st: st, io: io, req: req, pod: pod})
	}
	return todo
}

// start creates the task groups of the steps the engine starts. A step the scheduler
// cannot place yet, or whose task group could not be written, is taken back out of the
// pass's nodes: the engine starts it again in a later pass. A step that fits nowhere may
// preempt lower priorities, and then waits on its node for its victims
// (workflow_preempt.go).
func (p *wfPass) start(ctx context.Context, starts []engine.Start) {
	var pods, resources []engine.Start
	for _, st := range starts {
		if st.Template.Resource != nil {
			resources = append(resources, st)
		} else {
			pods = append(pods, st)
		}
	}
	p.resources(ctx, resources) // workflow_resource.go
	if starts = pods; len(starts) == 0 {
		return
	}
	todo, unplaced, held := p.stepsWithinQuota(ctx, p.plan(starts)) // quota_gate.go
	noms := p.nominatedSteps(ctx, todo)
	tgs, placedIDs, waiting, why := p.placeSteps(todo, noms)
	unplaced = append(unplaced, p.created(ctx, tgs, placedIDs)...)
	unplaced = append(unplaced, stepIDs(waiting)...)
	if err := p.preempt(ctx, waiting, noms); err != nil {
		p.c.log.Warn("preempt for workflow steps", "workflow", p.key.String(), "err", err)
		p.wake(wfPendingRetry)
	}
	if len(unplaced) > 0 {
		p.unstart(unplaced)
		p.waitWhy = held
		if why != "" {
			msg := fmt.Sprintf("%d step(s) cannot be placed yet: %s", len(unplaced), why)
			p.waitWhy = cmp.Or(held, msg)
			p.c.eventOnce(p.key.String(), msg, p.key, v4.EventWarning, "FailedScheduling", msg)
		}
		p.wake(unplacedRetry)
	}
}

// placeSteps places the steps of todo, each on its nominated node when noms has one
// for it, and builds the task groups of those placed; it returns them with their nodes'
// IDs, the steps left waiting and why the last of those without a nomination fits
// nowhere.
func (p *wfPass) placeSteps(todo []wfStepPlan, noms map[string]v4.Nomination) (tgs []*v4.TaskGroup, ids []string, waiting []wfStepPlan, why string) {
	ns := p.wf.Metadata.Namespace
	opts := scheduler.Options{Strategy: p.c.opts.Placement, Cluster: p.c.opts.Cluster}
	p.c.feed.With(func(s *scheduler.Snapshot) {
		for _, t := range todo {
			var res scheduler.Result
			nom, nominated := noms[t.st.NodeID]
			if nominated {
				res = placeOnNomination(s, oneIndex(t.req, nom.Index), nom, opts)
			} else {
				res = p.c.opts.Metrics.place(s, t.req, opts)
			}
			if len(res.Placements) == 0 {
				waiting = append(waiting, t)
				if !nominated { // a step waiting for its victims has its node: it is not unschedulable
					why = fmt.Sprint(res.Reason)
				}
				continue
			}
			pl := res.Placements[0]
			pl.Index = 0 // a nominated step was placed as its slot: the step is instance 0
			tg := newTaskGroup(p.wf, nil, t.pod, t.req, pl, p.now)
			tg.Metadata.Name = stepTaskGroupName(p.wf.Metadata.Name, t.st.NodeID, p.st.RetryCount)
			tg.Spec.Step = t.io
			tg.Metadata.Annotations = maps.Clone(tg.Metadata.Annotations)
			if tg.Metadata.Annotations == nil {
				tg.Metadata.Annotations = map[string]string{}
			}
			tg.Metadata.Annotations[workflowUIDAnnotation] = p.st.UID
			s.RemoveTaskGroup(ns, pl.Name) // placed under the scheduler's name: the step's is the node's
			s.SetTaskGroup(tg)
			tgs = append(tgs, tg)
			ids = append(ids, t.st.NodeID)
		}
	})
	return tgs, ids, waiting, why
}

// created writes the placed task groups and records them in their nodes; it returns
// the nodes whose task group is not there.
func (p *wfPass) created(ctx context.Context, tgs []*v4.TaskGroup, ids []string) []string {
	created, err := p.c.createAll(p.gate.fenced(ctx), tgs)
	var missing []string
	for i, tg := range tgs {
		if !created[i] && !p.exists(ctx, tg) {
			missing = append(missing, ids[i])
			continue
		}
		n := p.nodes[ids[i]]
		n.TaskGroup = tg.Metadata.Name
		p.set(n)
	}
	switch {
	case errors.Is(err, store.ErrQuotaFence): // another write of the namespace went first: count again
		p.wake(quotaRecount)
	case err != nil:
		p.c.log.Warn("create workflow steps", "workflow", p.key.String(), "err", err)
		p.wake(wfPendingRetry)
	}
	return missing
}

// exists reports whether a task group that could not be created exists already: one a
// leader before created for the same node, which this pass adopts.
func (p *wfPass) exists(ctx context.Context, tg *v4.TaskGroup) bool {
	_, err := p.c.store.Get(ctx, v4.KindTaskGroup, tg.Metadata.Namespace, tg.Metadata.Name)
	return err == nil
}

// unstart takes nodes the engine started out of the pass: gone from the nodes and from
// their parents' children (the engine links them again when it starts them).
func (p *wfPass) unstart(ids []string) {
	drop := map[string]bool{}
	for _, id := range ids {
		if _, old := p.before[id]; !old {
			drop[id] = true
			delete(p.nodes, id)
			delete(p.changed, id)
		}
	}
	for id := range p.changed {
		n, ok := p.nodes[id]
		if !ok || !slices.ContainsFunc(n.Children, func(c string) bool { return drop[c] }) {
			continue
		}
		n.Children = slices.DeleteFunc(slices.Clone(n.Children), func(c string) bool { return drop[c] })
		p.nodes[id] = n
	}
}

// namespaceFull says why a workflow that has not started waits for the namespace's
// limit of running workflows ("" when it may start).
func (c *WorkflowController) namespaceFull(wf *v4.Workflow) string {
	limit := c.opts.WorkflowsPerNamespace
	if limit <= 0 {
		return ""
	}
	objs, _, err := c.wfs.cache.List("", "")
	if err != nil {
		return ""
	}
	running := 0
	for _, o := range objs {
		w := o.(*v4.Workflow)
		if w.Metadata.Namespace == wf.Metadata.Namespace && w.Metadata.Name != wf.Metadata.Name &&
			!w.Status.StartedAt.IsZero() && !v4.WfPhaseFinished(w.Status.Phase) {
			running++
		}
	}
	if running < limit {
		return ""
	}
	return fmt.Sprintf("waiting: %d workflows run in namespace %s, its limit", running, wf.Metadata.Namespace)
}

// maxTemplateRefs bounds the workflowtemplates one workflow reaches.
const maxTemplateRefs = 100

// templateRefs reads the workflowtemplates the workflow's templateRefs reach, through
// those templates' own references too.
func (c *WorkflowController) templateRefs(ctx context.Context, wf *v4.Workflow) (map[string]*v4.WorkflowTemplate, error) {
	refs := map[string]*v4.WorkflowTemplate{}
	queue := refNames(wf.Spec.Templates)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if _, ok := refs[name]; ok {
			continue
		}
		if len(refs) >= maxTemplateRefs {
			return nil, fmt.Errorf("more than %d workflowtemplates referenced", maxTemplateRefs)
		}
		o, err := c.store.Get(ctx, v4.KindWorkflowTemplate, wf.Metadata.Namespace, name)
		if errors.Is(err, store.ErrNotFound) {
			refs[name] = nil // the engine fails the steps that call it
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("workflowtemplate %s: %w", name, err)
		}
		wt := o.(*v4.WorkflowTemplate)
		refs[name] = wt
		queue = append(queue, refNames(wt.Spec.Templates)...)
	}
	for name, wt := range refs {
		if wt == nil {
			delete(refs, name)
		}
	}
	return refs, nil
}

// refNames lists the workflowtemplates the templates' steps and tasks name.
func refNames(ts []v4.WfTemplate) []string {
	var out []string
	for _, t := range ts {
		for _, g := range t.Steps {
			for _, s := range g {
				if s.TemplateRef != nil {
					out = append(out, s.TemplateRef.Name)
				}
			}
		}
		if t.DAG != nil {
			for _, task := range t.DAG.Tasks {
				if task.TemplateRef != nil {
					out = append(out, task.TemplateRef.Name)
				}
			}
		}
	}
	return out
}

// stepConstraint places a step: its template's constraint (substituted with the step's
// inputs), else the workflow's.
func stepConstraint(wf *v4.Workflow, st engine.Start) *v4.Constraint {
	if st.Template.Constraint != nil {
		return st.Template.Constraint
	}
	return wf.Spec.Constraint
}
