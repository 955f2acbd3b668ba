package controller

import (
	"context"
	"fmt"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/workflow/engine"
)

// Preemption for workflows' steps, as for jobs' runs (job_preempt.go, preempt.go): a step
// that fits nowhere preempts lower priorities as the workflow's class says (never when it
// is revocable or its policy is Never); its nomination goes into the workflow's
// status.nominated before its victims are asked to stop, and later passes place the step
// on its node once they are gone. A workflow's own task groups are never victims.
//
// A step is no instance: the scheduler knows every step of a workflow as index 0 of the
// workflow, and a step that waits has no node in the status (the engine starts it again
// each pass, under the same node ID). So a nomination names its step by node ID
// (Nomination.Step), and takes as its Index a slot unique among the workflow's
// nominations, stored and new: the index its hold is known by in the snapshot, kept
// across leaders with the nomination.

// preemptor is the step st, at priority prio.
func (p *wfPass) preemptor(st engine.Start, prio int32) preemptor {
	return preemptor{key: p.key, what: fmt.Sprintf("step %s (%s)", st.Name, st.NodeID), prio: prio}
}

// nominatedSteps returns the stored nominations of todo's steps that still wait for their
// victims, by node ID, having asked the victims that still run to stop (a new leader
// finishes what the old one began). An expired nomination is left out: its step is
// placed, or preempts, afresh.
func (p *wfPass) nominatedSteps(ctx context.Context, todo []wfStepPlan) map[string]v4.Nomination {
	noms := map[string]v4.Nomination{}
	for _, t := range todo {
		i := slices.IndexFunc(p.wf.Status.Nominated, func(n v4.Nomination) bool { return n.Step == t.st.NodeID })
		if i < 0 {
			continue
		}
		nom := p.wf.Status.Nominated[i]
		by := p.preemptor(t.st, t.req.Priority)
		if p.c.nominationExpired(by, nom, p.now) {
			continue
		}
		p.c.stopVictims(ctx, by, nom)
		noms[t.st.NodeID] = nom
	}
	return noms
}

// preempt keeps the nominations of the waiting steps that hold one and, for up to
// maxPreemptionsPerPass of the others that may preempt, looks for victims, records each
// nomination in the workflow's status and stops its victims.
func (p *wfPass) preempt(ctx context.Context, waiting []wfStepPlan, noms map[string]v4.Nomination) error {
	var rest []wfStepPlan
	for _, t := range waiting {
		if nom, ok := noms[t.st.NodeID]; ok {
			p.nominated = append(p.nominated, nom)
			p.wake(nominationRetry)
		} else if !t.req.NoPreempt {
			rest = append(rest, t)
		}
	}
	opts := scheduler.Options{Strategy: p.c.opts.Placement, Cluster: p.c.opts.Cluster}
	for _, t := range rest[:min(len(rest), maxPreemptionsPerPass)] {
		if len(p.nominated) >= v4.MaxNominations {
			return nil
		}
		slot := p.freeSlot()
		nom, ok, err := p.c.preemptOne(ctx, oneIndex(t.req, slot), p.preemptor(t.st, t.req.Priority),
			v4.Nomination{Index: slot, Step: t.st.NodeID, At: p.now, Hold: stepHold(t.req)}, opts, p.recordNomination(ctx))
		if err != nil {
			return err
		}
		if ok {
			p.nominated = append(p.nominated, nom)
			p.wake(nominationRetry)
		}
	}
	return nil
}

// recordNomination returns the write of a new nomination into the stored workflow's
// status, beside the nominations the pass kept, before its victims are asked to stop.
// Only status.nominated is written: the pass's other changes are written at its end.
func (p *wfPass) recordNomination(ctx context.Context) func(v4.Nomination) error {
	return func(nom v4.Nomination) error {
		noms := append(slices.Clone(p.nominated), nom)
		return writeStored(ctx, p.c.store, p.key, func(wf *v4.Workflow) error {
			if wf.Status.UID != p.st.UID {
				return fmt.Errorf("workflow %s was replaced by another of its name", p.key)
			}
			st := wf.Status
			st.Nominated = noms
			return p.c.storeStatus(ctx, p.key, wf, st, nil)
		})
	}
}

// freeSlot is the least index no nomination of the workflow holds, stored (whose holds
// the pass may still clear) or kept by this pass.
func (p *wfPass) freeSlot() int {
	for slot := 0; ; slot++ {
		_, stored := nominationOf(p.wf.Status.Nominated, slot)
		_, kept := nominationOf(p.nominated, slot)
		if !stored && !kept {
			return slot
		}
	}
}

// stepHold is the room a step's nomination holds, kept in it (v4.NominationHold).
func stepHold(req *scheduler.Request) *v4.NominationHold {
	h := &v4.NominationHold{Resources: req.Resources, Priority: req.Priority}
	for _, p := range req.FixedPorts {
		h.Ports = append(h.Ports, p.HostPort)
	}
	return h
}

// holdRequest is the request of the room a step's nomination holds, for a server that
// has no engine pass of the workflow at hand (plan_state.go); nil for a nomination
// without a hold.
func holdRequest(key scheduler.AppKey, nom v4.Nomination) *scheduler.Request {
	h := nom.Hold
	if h == nil {
		return nil
	}
	req := &scheduler.Request{App: key, Indexes: []int{nom.Index}, Resources: h.Resources, Priority: h.Priority}
	for _, p := range h.Ports {
		req.FixedPorts = append(req.FixedPorts, v4.AllocatedPort{HostPort: p})
	}
	return req
}

// keepNominations puts the nominations the pass kept in the status (none once the
// workflow finished: no step waits any more) and drops the holds of the others.
func (p *wfPass) keepNominations() {
	if v4.WfPhaseFinished(p.st.Phase) {
		p.nominated = nil
	}
	p.st.Nominated = p.nominated
	p.c.clearStaleHolds(p.key, p.nominated)
}

// restoreNominations runs, once the caches are loaded and before the workers start, a
// pass of every workflow that holds nominations. A step's hold needs its request, which
// only the engine's pass rebuilds (the step's template, substituted with its inputs), so
// the pass is the restore: it holds each nominated node again before this controller
// places anything, finishes stopping the victims, places the steps whose victims are
// gone, and chooses no new victims for a step while its nomination lasts.
func (c *WorkflowController) restoreNominations(ctx context.Context) error {
	objs, _, err := c.wfs.cache.List("", "")
	if err != nil {
		return fmt.Errorf("list workflows: %w", err)
	}
	for _, o := range objs {
		wf := o.(*v4.Workflow)
		if len(wf.Status.Nominated) == 0 {
			continue
		}
		key := scheduler.AppKey{Kind: v4.KindWorkflow, Namespace: wf.Metadata.Namespace, Name: wf.Metadata.Name}
		if _, err := c.reconcile(ctx, key); err != nil {
			c.log.Warn("restore the nominations of a workflow", "workflow", key.String(), "err", err)
		}
		c.queue.Add(key) // its next pass is due soon: it waits for victims
	}
	return ctx.Err()
}
