package controller

import (
	"context"
	"fmt"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/quota"
	"github.com/berthhq/berth/internal/store"
)

// Jobs, cronjobs' runs and workflows' steps count against their namespace's resource
// quota while their task groups are active (docs/policy.md, "Counting"). Admission lets
// them in as long as one run fits the quota; the controllers then start only the runs
// and steps that fit the room left, and hold the others pending with the reason in the
// status and a QuotaExceeded event, as Kubernetes' job controller does when the quota
// refuses its pods. A run held this way is tried again in a later pass.
//
// The writes of what a gate lets in carry the namespace's quota fence as the gate counted
// it (store.QuotaFence, docs/policy.md "Exactness"), as the users' writes of the
// namespace do: a user's write admitted on another server after the count, and the
// pass's write, cannot both commit against the same usage. The one that loses counts
// again: the pass in its next round (quotaRecount), the user's write in its admission.

// quotaGate is the room a pass has left in one namespace's quota.
type quotaGate struct {
	ns     string
	limits quota.List
	used   quota.List
	fence  store.QuotaFence // the namespace's fence at the count
}

// quotaRecount is when a pass whose writes lost the namespace's quota fence (another
// write of the namespace committed since its count) looks again.
const quotaRecount = 200 * time.Millisecond

// quotaGate reads ns's quota and its usage (recounted from the stored state, with the
// namespace's quota fence). It returns nil, which admits everything, when ns has no
// resource quota.
func (c *base) quotaGate(ctx context.Context, ns string) (*quotaGate, error) {
	limits, err := c.store.Limits(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("read the quota of namespace %s: %w", ns, err)
	}
	if len(limits.Resources) == 0 {
		return nil, nil
	}
	objs, rev, err := c.store.NamespaceObjectsFenced(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("count the usage of namespace %s: %w", ns, err)
	}
	g := &quotaGate{ns: ns, limits: limits.Resources, used: quota.Usage(objs)}
	g.fence.See(ns, rev)
	return g, nil
}

// fenced is ctx for the writes of what g let in: they commit only while no other fenced
// write of the namespace committed since g counted, and fail with store.ErrQuotaFence
// otherwise. ctx as it is without a gate (no resource quota).
func (g *quotaGate) fenced(ctx context.Context) context.Context {
	if g == nil {
		return ctx
	}
	return store.WithQuotaFence(ctx, &g.fence)
}

// take counts asks against the room left: the quota's refusal when it does not fit.
func (g *quotaGate) take(asks quota.List) error {
	if g == nil {
		return nil
	}
	if err := quota.Check(g.ns, g.limits, g.used, asks); err != nil {
		return err
	}
	g.used.Add(asks)
	return nil
}

// ReasonQuotaExceeded is the event of a run or step held for its namespace's quota.
const ReasonQuotaExceeded = "QuotaExceeded"

// runsWithinQuota is the part of idxs whose runs fit the job's namespace's quota;
// the others wait, with the reason noted.
func (p *jobPass) runsWithinQuota(ctx context.Context, idxs []int) []int {
	gate, err := p.c.quotaGate(ctx, p.key.Namespace)
	if err != nil {
		p.note(err.Error())
		p.wake(unplacedRetry)
		return nil
	}
	p.gate = gate
	per := quota.PerInstance(&p.job.Spec.Template.Spec)
	for i := range idxs {
		if err := gate.take(per); err != nil {
			msg := fmt.Sprintf("%d run(s) wait for room in the namespace's quota: %v", len(idxs)-i, err)
			p.note(msg)
			p.c.eventOnce(p.key.String()+"/quota", msg, p.key, v4.EventWarning, ReasonQuotaExceeded, msg)
			p.wake(unplacedRetry)
			return idxs[:i]
		}
	}
	return idxs
}

// stepsWithinQuota splits a workflow pass's planned steps into those that fit its
// namespace's quota and the nodes of those that wait, with the reason.
func (p *wfPass) stepsWithinQuota(ctx context.Context, todo []wfStepPlan) ([]wfStepPlan, []string, string) {
	if p.wf.Spec.Revocable() { // lent capacity is no namespace's quota (docs/policy.md, "Quotas")
		return todo, nil, ""
	}
	gate, err := p.c.quotaGate(ctx, p.key.Namespace)
	if err != nil {
		return nil, stepIDs(todo), err.Error()
	}
	p.gate = gate
	var fit []wfStepPlan
	var held []string
	var why error
	for _, t := range todo {
		if err := gate.take(quota.PerInstance(&t.pod.Spec)); err != nil {
			held, why = append(held, t.st.NodeID), err
			continue
		}
		fit = append(fit, t)
	}
	if why == nil {
		return fit, nil, ""
	}
	msg := fmt.Sprintf("%d step(s) wait for room in the namespace's quota: %v", len(held), why)
	p.c.eventOnce(p.key.String()+"/quota", msg, p.key, v4.EventWarning, ReasonQuotaExceeded, msg)
	return fit, held, msg
}

func stepIDs(todo []wfStepPlan) []string {
	ids := make([]string, len(todo))
	for i, t := range todo {
		ids[i] = t.st.NodeID
	}
	return ids
}
