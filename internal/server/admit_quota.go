package server

import (
	"context"
	"errors"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/quota"
	"github.com/berthhq/berth/internal/store"
)

// Resource quotas and limit defaults at admission (docs/policy.md, "Quotas and limit
// defaults"). Every write of a user's object passes admitQuota (the one admission chain:
// /v1, apply, BCS's and deployd's routes, workflow resource steps); scale and a
// rollout's undo, which change a stored object on the requester's behalf, call
// checkObjectQuota. A namespace's usage is counted again from the stored state
// (store.ResourceUsage) for each request, so nothing drifts and a leader change leaves
// nothing to repair.

// nsQuota is what an admission read of one namespace: its limits and, when it has a
// resource quota, its objects that ask for resources, with the request's earlier objects
// in place of the stored ones.
type nsQuota struct {
	limits store.NamespaceLimits
	objs   []v4.Object
}

// admitQuota gives the target's tasks the namespace's limit defaults, refuses a task
// above the namespace's maximum per task, then refuses a write that would take the
// namespace past its resource quota. It runs before admitGPUShares, so a GPU request
// above the quota is refused as such even on a cluster without GPUs.
func admitQuota(ctx context.Context, a *admission, t target) error {
	if t.obj == nil {
		return nil
	}
	q, err := a.quotaOf(ctx, t.ns)
	if err != nil {
		return err
	}
	if err := quota.Apply(t.ns, t.obj, q.limits.LimitDefaults); err != nil {
		return invalidQuotaSpec(t, err)
	}
	if len(q.limits.Resources) == 0 {
		return nil
	}
	if err := oneRunFits(t.ns, q.limits.Resources, t.obj); err != nil {
		return err
	}
	before := quota.Usage(q.objs)
	q.objs = replaced(q.objs, t.obj)
	return quotaRefusal(quota.Check(t.ns, q.limits.Resources, before, quota.Delta(before, quota.Usage(q.objs))))
}

// quotaOf reads ns's limits, and its objects when it has a resource quota, once per
// request.
func (a *admission) quotaOf(ctx context.Context, ns string) (*nsQuota, error) {
	if q, ok := a.quota[ns]; ok {
		return q, nil
	}
	limits, err := a.s.store.Limits(ctx, ns)
	if err != nil {
		return nil, err
	}
	q := &nsQuota{limits: limits}
	if len(limits.Resources) > 0 {
		if q.objs, err = a.s.store.NamespaceObjects(ctx, ns); err != nil {
			return nil, err
		}
	}
	if a.quota == nil {
		a.quota = map[string]*nsQuota{}
	}
	a.quota[ns] = q
	return q, nil
}

// checkObjectQuota refuses obj, a stored object the server changes for the requester
// (a scale, a rollout's undo), when the change takes its namespace past its quota.
func (s *Server) checkObjectQuota(ctx context.Context, obj v4.Object) error {
	ns := obj.GetMeta().Namespace
	limits, err := s.store.Limits(ctx, ns)
	if err != nil || len(limits.Resources) == 0 {
		return err
	}
	objs, err := s.store.NamespaceObjects(ctx, ns)
	if err != nil {
		return err
	}
	before := quota.Usage(objs)
	return quotaRefusal(quota.Check(ns, limits.Resources, before, quota.Delta(before, quota.Usage(replaced(objs, obj)))))
}

// replaced is objs with obj in place of the object of its kind and name, or added. A
// replaced daemonset keeps the stored one's status (the nodes it runs on, which it
// counts by): what a user sends as status is ignored.
func replaced(objs []v4.Object, obj v4.Object) []v4.Object {
	m := obj.GetMeta()
	out := make([]v4.Object, 0, len(objs)+1)
	for _, o := range objs {
		om := o.GetMeta()
		if o.GetKind() != obj.GetKind() || om.Name != m.Name || om.Namespace != m.Namespace {
			out = append(out, o)
			continue
		}
		if old, ok := o.(*v4.Daemonset); ok {
			if d, ok := obj.(*v4.Daemonset); ok {
				c := *d
				c.Status = old.Status
				obj = &c
			}
		}
	}
	return append(out, obj)
}

// oneRunFits refuses a job, cronjob or workflow one of whose runs (a job's task group, a
// workflow's step) asks more than the whole quota: it could never start. Runs that fit
// are admitted and wait for room (the controllers hold them pending).
func oneRunFits(ns string, limits quota.List, obj v4.Object) error {
	for _, run := range quota.Runs(obj) {
		if err := quota.Check(ns, limits, nil, run); err != nil {
			return quotaRefusal(err)
		}
	}
	return nil
}

// quotaRefusal is the 403 of a write past a quota, naming the namespace, the resource,
// the usage and the limit.
func quotaRefusal(err error) error {
	var ee *quota.ExceededError
	if !errors.As(err, &ee) {
		return err
	}
	return httpapi.Errorf(http.StatusForbidden, "%s", ee.Error()).
		WithDetail("quota."+ee.Resource, "ask an administrator to raise the namespace's quota, or free some of it")
}

// invalidQuotaSpec is the 422 of a task above the namespace's maximum per task.
func invalidQuotaSpec(t target, err error) error {
	var fe v4.FieldErrors
	if !errors.As(err, &fe) {
		return err
	}
	ae := httpapi.Errorf(http.StatusUnprocessableEntity, "%s", httpapi.InvalidMessage(string(t.kind)+" "+t.ns+"/"+t.name, fe))
	ae.Details = fe
	return ae
}
