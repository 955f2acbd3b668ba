package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/berthhq/berth/internal/acl"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store/cache"
)

// defaultPlanSyncWait is how long a plan waits for the scheduler feed's first full list
// (right after a start) before answering 503.
const defaultPlanSyncWait = 5 * time.Second

// handlePlan runs the scheduler on a copy of its snapshot for every placeable object of
// the body (a document stream like /v1/apply) and says where the missing instances would
// go, or why they fit nowhere. Nothing is written. All objects are placed in one pass, in
// stream order, so later documents see the placements of earlier ones.
func (s *Server) handlePlan(w http.ResponseWriter, r *http.Request) error {
	docs, err := s.readDocuments(w, r, "the plan stream")
	if err == nil {
		noteDocuments(r, acl.VerbRead, docs)
		err = s.checkReads(r, docs)
	}
	if err != nil {
		return err
	}
	snap, err := s.planSnapshot(r.Context())
	if err != nil || snap == nil {
		return err
	}
	out := v4.PlanResult{Results: []v4.PlanObject{}, Skipped: []v4.PlanSkip{}}
	var reqs []*scheduler.Request
	var slots []int // out.Results index of each request
	for i, d := range docs {
		obj, m := d.Object, d.Object.GetMeta()
		missing, existing, skip := instancesToPlace(obj, snap)
		if skip != "" {
			out.Skipped = append(out.Skipped, v4.PlanSkip{Kind: obj.GetKind(), Namespace: m.Namespace, Name: m.Name, Reason: skip})
			continue
		}
		if err := s.planPriority(r.Context(), obj); err != nil {
			return err
		}
		req, err := scheduler.RequestFor(obj, missing)
		if err != nil {
			field := ""
			if len(docs) > 1 {
				field = fmt.Sprintf("documents[%d]", i)
			}
			return httpapi.Errorf(http.StatusUnprocessableEntity, "cannot plan %s %s/%s: %v", obj.GetKind(), m.Namespace, m.Name, err).
				WithDetail(field, err.Error())
		}
		out.Results = append(out.Results, v4.PlanObject{
			Kind: obj.GetKind(), Namespace: m.Namespace, Name: m.Name,
			Existing: existing, Placements: []v4.PlanPlacement{}, Unplaced: []int{},
		})
		if len(missing) > 0 {
			reqs = append(reqs, req)
			slots = append(slots, len(out.Results)-1)
		}
	}
	opts := scheduler.Options{Strategy: s.placement}
	for _, j := range scheduler.ByPriority(reqs) { // higher priorities first, as the controllers place
		res, pre := snap.PlaceOrPreempt(reqs[j], opts, v4.MaxNominations)
		fillPlan(&out.Results[slots[j]], res)
		fillPreemptions(&out.Results[slots[j]], pre, identityOf(r))
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

// planSnapshot is a copy of the scheduler's snapshot with what only the leader's
// controllers keep in theirs (disruption budgets, the holds of nominations), once the
// feed and the caches of workloads and jobs are loaded: 503 when they are not within
// planSyncWait (right after a start), nil without an error when the request ended.
func (s *Server) planSnapshot(ctx context.Context) (*scheduler.Snapshot, error) {
	wctx, cancel := context.WithTimeout(ctx, s.planSyncWait)
	defer cancel()
	select {
	case <-s.feed.Synced():
	case <-wctx.Done():
	}
	if wctx.Err() == nil {
		_ = cache.WaitSynced(wctx, s.planCaches...)
	}
	switch {
	case ctx.Err() != nil:
		return nil, nil
	case wctx.Err() != nil:
		return nil, httpapi.Errorf(http.StatusServiceUnavailable,
			"the scheduler has not loaded the cluster's nodes, task groups and workloads yet (waited %s); try again", s.planSyncWait)
	}
	snap := s.feed.Clone()
	if err := controller.RestoreOwners(snap, s.planCaches, scheduler.Options{Strategy: s.placement}); err != nil {
		return nil, httpapi.Errorf(http.StatusServiceUnavailable, "%v", err)
	}
	return snap, nil
}

// instancesToPlace returns the indexes a plan places for obj and the ones that already
// have a task group, or why obj is skipped. Applications, processes and deployments want
// indexes 0..instance-1; a daemonset wants one instance per node, indexes 0..nodes-1.
func instancesToPlace(obj v4.Object, snap *scheduler.Snapshot) (missing, existing []int, skip string) {
	var want int
	switch o := obj.(type) {
	case *v4.Application:
		want = o.Spec.Instance
	case *v4.Process:
		want = o.Spec.Instance
	case *v4.Deployment:
		if o.Spec.Template == nil {
			return nil, nil, "a deployment without a template is placed through its application"
		}
		want = o.Spec.Instance
	case *v4.Daemonset:
		want = snap.Nodes()
	default:
		return nil, nil, fmt.Sprintf("%s objects are not placed", obj.GetKind())
	}
	m := obj.GetMeta()
	existing = snap.Indexes(scheduler.AppKey{Kind: obj.GetKind(), Namespace: m.Namespace, Name: m.Name})
	if existing == nil {
		existing = []int{}
	}
	missing = []int{}
	for i := range want {
		if !slices.Contains(existing, i) {
			missing = append(missing, i)
		}
	}
	return missing, existing, ""
}

// fillPlan copies one scheduler result into the API's shape.
func fillPlan(p *v4.PlanObject, res scheduler.Result) {
	for _, pl := range res.Placements {
		ports := pl.Ports
		if ports == nil {
			ports = []v4.AllocatedPort{}
		}
		p.Placements = append(p.Placements, v4.PlanPlacement{Index: pl.Index, Node: pl.Node, Ports: ports, GPUs: pl.GPUs, PassedOver: pl.PassedOver})
	}
	if len(res.Unplaced) == 0 {
		return
	}
	p.Unplaced = slices.Clone(res.Unplaced)
	reason := res.Reason
	if reason == nil {
		reason = &scheduler.Reason{}
	}
	p.Reason = &v4.PlanReason{Nodes: reason.Nodes, Checks: []v4.PlanCheck{}}
	for _, c := range reason.Checks {
		p.Reason.Checks = append(p.Reason.Checks, v4.PlanCheck{Check: c.Check, Nodes: c.Nodes})
	}
	p.Message = reason.String()
}
