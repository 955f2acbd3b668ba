package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

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
	a.quota.judged = append(a.quota.judged, t)
	before := quota.Usage(q.objs)
	q.objs = replaced(q.objs, t.obj)
	return quotaRefusal(quota.Check(t.ns, q.limits.Resources, before, quota.Delta(before, quota.Usage(q.objs))))
}

// quotaAdmission is what an admission keeps of quotas: per namespace its limits and
// objects, and the locks of the namespaces it judged, held until done.
type quotaAdmission struct {
	byNS    map[string]*nsQuota
	unlocks []func()
	locked  bool
	// fence holds the namespaces' quota fences as counted (admit_quota_fence.go); judged
	// are the targets judged against a resource quota, judged again when a fence moved.
	fence  store.QuotaFence
	judged []target
}

// quotaOf reads ns's limits, and its objects when it has a resource quota, once per
// request. Its first call takes the quota locks of every namespace of the request that
// has a resource quota (in their names' order, so two requests never wait for each
// other), which the admission holds until done: two writes of one namespace on this
// server are then judged one after the other, each against the other's result. The
// quota fence (admit_quota_fence.go) alone would keep the usage exact; the lock spares
// this server's writes of one namespace the failed transactions and the counts again
// that racing on the fence would cost them.
func (a *admission) quotaOf(ctx context.Context, ns string) (*nsQuota, error) {
	if q, ok := a.quota.byNS[ns]; ok {
		return q, nil
	}
	if err := a.lockQuotas(ctx, ns); err != nil {
		return nil, err
	}
	limits, err := a.s.store.Limits(ctx, ns)
	if err != nil {
		return nil, err
	}
	q := &nsQuota{limits: limits}
	if len(limits.Resources) > 0 {
		objs, fence, err := a.s.store.NamespaceObjectsFenced(ctx, ns)
		if err != nil {
			return nil, err
		}
		q.objs = objs
		a.quota.fence.See(ns, fence)
	}
	if a.quota.byNS == nil {
		a.quota.byNS = map[string]*nsQuota{}
	}
	a.quota.byNS[ns] = q
	return q, nil
}

func (a *admission) lockQuotas(ctx context.Context, ns string) error {
	if a.quota.locked {
		return nil
	}
	a.quota.locked = true
	nss := map[string]bool{ns: true}
	for _, d := range a.docs {
		nss[d.Object.GetMeta().Namespace] = true
	}
	for _, n := range slices.Sorted(maps.Keys(nss)) {
		unlock, err := a.s.lockQuota(ctx, n)
		if err != nil {
			return err
		}
		a.quota.unlocks = append(a.quota.unlocks, unlock)
	}
	return nil
}

// done releases the quota locks the admission took; the caller defers it past its store
// write.
func (a *admission) done() {
	for _, unlock := range a.quota.unlocks {
		unlock()
	}
	a.quota.unlocks = nil
}

// lockQuota takes ns's quota lock when ns has a resource quota (a no-op unlock when it
// has none, so other namespaces' writes never wait).
func (s *Server) lockQuota(ctx context.Context, ns string) (func(), error) {
	limits, err := s.store.Limits(ctx, ns)
	if err != nil {
		return nil, err
	}
	if len(limits.Resources) == 0 {
		return func() {}, nil
	}
	unlock, err := s.quotaLocks.Lock(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("wait for the other writes of namespace %s: %w", ns, err)
	}
	return unlock, nil
}

// checkObjectQuota refuses obj, a stored object the server changes for the requester
// (a scale, a rollout's undo), when the change takes its namespace past its quota. It
// returns the namespace's quota fence as counted (nil without a resource quota), which
// the write of obj carries (store.WithQuotaFence); a write that fails with
// store.ErrQuotaFence is checked again.
func (s *Server) checkObjectQuota(ctx context.Context, obj v4.Object) (*store.QuotaFence, error) {
	ns := obj.GetMeta().Namespace
	limits, err := s.store.Limits(ctx, ns)
	if err != nil || len(limits.Resources) == 0 {
		return nil, err
	}
	objs, rev, err := s.store.NamespaceObjectsFenced(ctx, ns)
	if err != nil {
		return nil, err
	}
	before := quota.Usage(objs)
	if err := quota.Check(ns, limits.Resources, before, quota.Delta(before, quota.Usage(replaced(objs, obj)))); err != nil {
		return nil, quotaRefusal(err)
	}
	f := &store.QuotaFence{}
	f.See(ns, rev)
	return f, nil
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
