package controller

import (
	"context"
	"fmt"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store/cache"
)

// The leading server's controllers keep two things in their scheduler snapshot that the
// stored nodes and task groups do not say: each workload's disruption budget, and the
// room held on a node for an instance or run whose preemption's victims are stopping
// (its nomination). Both come from the owners' specs and statuses, and RestoreOwners
// puts them into a snapshot:
//
//   - at the start of a term of leadership, before any controller places (Manager):
//     each controller restores its own kinds' holds before its own placements, but
//     another's placements could come first and take the room;
//   - into every fresh snapshot of the feed (a list after a watch ended), which holds
//     only nodes, task groups and volumes;
//   - into a plan's copy of a server's snapshot (`berth plan`), so that any server picks
//     the victims the leader would and leaves the held room alone.
//
// A hold put back from a status read just before its nomination was cleared is dropped
// at its owner's next pass (clearStaleHolds). A workflow step's nomination carries the
// room it holds (v4.NominationHold): its size is the step's template substituted with its
// inputs, which only the workflow engine's pass computes.

// ownerKinds are the kinds whose objects carry disruption budgets or nominations.
var ownerKinds = []v4.Kind{v4.KindApplication, v4.KindProcess, v4.KindJob, v4.KindWorkflow}

// OwnerCaches are the caches RestoreOwners reads, declared at a server's start so that
// they are loaded when its first plan or term comes.
func OwnerCaches(caches *cache.Registry) []*cache.Cache {
	out := make([]*cache.Cache, len(ownerKinds))
	for i, kind := range ownerKinds {
		out[i] = caches.For(kind)
	}
	return out
}

// RestoreOwners puts the budgets and the nominations' holds of the cached owners into s.
func RestoreOwners(s *scheduler.Snapshot, caches []*cache.Cache, opts scheduler.Options) error {
	for _, c := range caches {
		objs, _, err := c.List("", "")
		if err != nil {
			return fmt.Errorf("list %s: %w", c.Kind().Plural(), err)
		}
		for _, o := range objs {
			restoreOwner(s, o, opts)
		}
	}
	return nil
}

// restoreOwners puts the owners' budgets and holds into the feed's snapshot once it and
// the owners' caches are loaded, and into each fresh snapshot the feed lists from then
// on. It returns without an error when ctx ends first.
func restoreOwners(ctx context.Context, f *feed.Feed, registry *cache.Registry, opts scheduler.Options) error {
	caches := OwnerCaches(registry)
	select {
	case <-f.Synced():
	case <-ctx.Done():
		return nil
	}
	if cache.WaitSynced(ctx, caches...) != nil {
		return nil
	}
	f.OnFresh(func(s *scheduler.Snapshot) { _ = RestoreOwners(s, caches, opts) }) // a list that fails is listed again
	var err error
	f.With(func(s *scheduler.Snapshot) { err = RestoreOwners(s, caches, opts) })
	if err != nil {
		return fmt.Errorf("restore the owners' budgets and holds: %w", err)
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
	case *v4.Workflow:
		m := obj.GetMeta()
		key := scheduler.AppKey{Kind: v4.KindWorkflow, Namespace: m.Namespace, Name: m.Name}
		for _, nom := range o.Status.Nominated {
			if req := holdRequest(key, nom); req != nil {
				s.NominateCards(req, nom.Index, nom.Node, nom.GPUs, opts)
			}
		}
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
