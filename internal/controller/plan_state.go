package controller

import (
	"fmt"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store/cache"
)

// The leading server's controllers keep two things in their scheduler snapshot that the
// stored nodes and task groups do not say: each workload's disruption budget, and the
// room held on a node for an instance or run whose preemption's victims are stopping
// (its nomination). Both come from the owners' specs and statuses: a new leader restores
// them before it places anything (restoreNominations). A plan (`berth plan`), which any
// server answers from a copy of its own snapshot, needs the same state to pick the
// victims the leader would and to leave the held room alone: PlanState puts it there.
//
// A workflow step's hold is the one it cannot put: its size is the step's template
// substituted with its inputs, which only the workflow engine's pass rebuilds
// (workflow_preempt.go). A plan on a server that does not lead may place into the room
// a nominated step holds; the leader's controllers never do.

// planOwnerKinds are the kinds whose objects carry disruption budgets or nominations.
var planOwnerKinds = []v4.Kind{v4.KindApplication, v4.KindProcess, v4.KindJob}

// PlanCaches are the caches PlanState reads, declared at a server's start so that they
// are loaded when its first plan comes.
func PlanCaches(caches *cache.Registry) []*cache.Cache {
	out := make([]*cache.Cache, len(planOwnerKinds))
	for i, kind := range planOwnerKinds {
		out[i] = caches.For(kind)
	}
	return out
}

// PlanState puts the budgets and the nominations' holds of the cached owners into s, a
// copy of a server's snapshot (feed.Clone). On the leader it changes nothing but the
// holds of nominations whose instance was placed or expired a moment ago and whose
// status the controller has not written yet.
func PlanState(s *scheduler.Snapshot, caches []*cache.Cache, opts scheduler.Options) error {
	for _, c := range caches {
		objs, _, err := c.List("", "")
		if err != nil {
			return fmt.Errorf("list %s for the plan: %w", c.Kind().Plural(), err)
		}
		for _, o := range objs {
			restoreOwner(s, o, opts)
		}
	}
	return nil
}

// restoreOwner puts obj's disruption budget, if it is a workload, and the holds of its
// nominations into s.
func restoreOwner(s *scheduler.Snapshot, obj v4.Object, opts scheduler.Options) {
	var noms []v4.Nomination
	switch o := obj.(type) {
	case *v4.Application, *v4.Process:
		w := workload(o)
		m := obj.GetMeta()
		setBudget(s, scheduler.AppKey{Kind: obj.GetKind(), Namespace: m.Namespace, Name: m.Name}, w)
		noms = w.Status.Nominated
	case *v4.Job:
		noms = o.Status.Nominated
	}
	for _, nom := range noms {
		req, err := scheduler.RequestFor(obj, []int{nom.Index})
		if err != nil {
			continue
		}
		s.NominateCards(req, nom.Index, nom.Node, nom.GPUs, opts)
	}
}

// setBudget gives s the workload's disruption budget (w nil: the workload is gone).
func setBudget(s *scheduler.Snapshot, key scheduler.AppKey, w *v4.Workload) {
	if w == nil || w.Spec.DisruptionBudget == nil {
		s.RemoveDisruptionBudget(key)
		return
	}
	s.SetDisruptionBudget(key, w.Spec.Instance-len(w.Spec.StoppedInstances), w.Spec.DisruptionBudget.MaxUnavailable)
}
