package controller

import (
	"context"
	"fmt"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/quota"
)

// Jobs, cronjobs' runs and workflows' steps count against their namespace's resource
// quota while their task groups are active (docs/policy.md, "Counting"). Admission lets
// them in as long as one run fits the quota; the controllers then start only the runs
// and steps that fit the room left, and hold the others pending with the reason in the
// status and a QuotaExceeded event, as Kubernetes' job controller does when the quota
// refuses its pods. A run held this way is tried again in a later pass.

// quotaGate is the room a pass has left in one namespace's quota.
type quotaGate struct {
	ns     string
	limits quota.List
	used   quota.List
}

// quotaGate reads ns's quota and its usage (recounted from the stored state, which holds
// every task group this controller wrote: it is the leader's and writes through the
// store). It returns nil, which admits everything, when ns has no resource quota.
func (c *base) quotaGate(ctx context.Context, ns string) (*quotaGate, error) {
	limits, err := c.store.Limits(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("read the quota of namespace %s: %w", ns, err)
	}
	if len(limits.Resources) == 0 {
		return nil, nil
	}
	used, err := c.store.ResourceUsage(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("count the usage of namespace %s: %w", ns, err)
	}
	return &quotaGate{ns: ns, limits: limits.Resources, used: used}, nil
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
