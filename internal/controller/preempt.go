package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// Preemption (docs/policy.md, "Priorities and preemption"). When instances of a
// workload fit nowhere, the scheduler chooses victims of lower priority on one node; the
// pass then, in this order,
//
//  1. holds the room on that node in the snapshot (Nominate), so nothing of lower
//     priority is placed there while the victims stop;
//  2. records the nomination (node and victims) in the workload's status;
//  3. asks the victims to stop (their kill grace period), with an event naming the
//     preemptor and the annotation v4.PreemptedByAnnotation.
//
// Later passes place the instance on its node once the victims are gone. A new leader
// finds the nominations in the statuses: it restores the holds before any placement
// (restoreNominations), finishes stopping victims the old leader may not have reached,
// and chooses no new ones while the nomination lasts.

// Bounds of preemption.
const (
	// maxPreemptionsPerPass is how many instances one pass preempts for.
	maxPreemptionsPerPass = 4
	// nominationTimeout is how long an instance waits for its victims: a victim whose
	// agent never answers is deleted after its grace period and stopTimeout, so past
	// this the node is given up and the instance placed (or preempting) afresh.
	nominationTimeout = 3 * time.Minute
	// nominationRetry is how often a nominated instance looks at its node again.
	nominationRetry = 2 * time.Second
)

// placeOptions are the options of every placement of the controller.
func (c *AppController) placeOptions() scheduler.Options {
	return scheduler.Options{Strategy: c.opts.Placement, Cluster: c.opts.Cluster}
}

// preemptor names who preempts in its own events and in its victims' events and
// PreemptedByAnnotation: "process ns/urgent instance 0, priority 1000".
type preemptor struct {
	key  scheduler.AppKey
	what string // the one waiting for room: "instance 0", "run 2", "step wf[0].a (id)"
	prio int32
}

func (p preemptor) String() string {
	return fmt.Sprintf("%s %s/%s %s, priority %d", p.key.Kind, p.key.Namespace, p.key.Name, p.what, p.prio)
}

// preemptor is the workload's instance idx, at priority prio.
func (r *pass) preemptor(idx int, prio int32) preemptor {
	return preemptor{key: r.key, what: fmt.Sprintf("instance %d", idx), prio: prio}
}

// nominationOf returns the nomination of instance idx among noms, if any.
func nominationOf(noms []v4.Nomination, idx int) (v4.Nomination, bool) {
	for _, n := range noms {
		if n.Index == idx {
			return n, true
		}
	}
	return v4.Nomination{}, false
}

// placeNominated places the instances of free that hold a nominated node there, and
// returns the others. One whose victims are still stopping keeps its nomination and
// waits; one whose nomination expired is returned, to be placed afresh.
func (r *pass) placeNominated(ctx context.Context, free []int) ([]int, error) {
	var rest []int
	for _, idx := range free {
		nom, ok := nominationOf(r.w.Status.Nominated, idx)
		if !ok {
			rest = append(rest, idx)
			continue
		}
		req, err := scheduler.RequestFor(r.obj, []int{idx})
		if err != nil {
			return nil, err
		}
		by := r.preemptor(idx, req.Priority)
		if r.c.nominationExpired(by, nom, r.now) {
			rest = append(rest, idx)
			continue
		}
		r.c.stopVictims(ctx, by, nom) // a new leader finishes what the old one began
		res, err := r.placeBy(ctx, req, func(s *scheduler.Snapshot, opts scheduler.Options) scheduler.Result {
			return placeOnNomination(s, req, nom, opts)
		})
		if err != nil {
			return nil, err
		}
		if len(res.Placements) == 0 {
			r.nominated = append(r.nominated, nom)
			r.phases = append(r.phases, v4.StatusStaging)
			if r.message == "" {
				r.message = fmt.Sprintf("instance %d waits on node %s for %d preempted task groups to stop", idx, nom.Node, len(nom.Victims))
			}
			r.wake(nominationRetry)
		}
	}
	return rest, nil
}

// preempt looks for victims for the instances of req left unplaced, records each
// nomination and stops its victims.
func (r *pass) preempt(ctx context.Context, req *scheduler.Request, unplaced []int) error {
	if req.NoPreempt {
		return nil
	}
	for _, idx := range unplaced[:min(len(unplaced), maxPreemptionsPerPass)] {
		if len(r.nominated) >= v4.MaxNominations {
			return nil
		}
		one := oneIndex(req, idx)
		nom, ok, err := r.c.preemptOne(ctx, one, r.preemptor(idx, one.Priority), v4.Nomination{Index: idx, At: r.now},
			r.c.placeOptions(), func(nom v4.Nomination) error {
				st := r.w.Status
				st.Nominated = append(slices.Clone(r.nominated), nom)
				if err := r.c.updateStatus(ctx, r.key, st); err != nil {
					return err
				}
				r.w.Status.Nominated = st.Nominated
				return nil
			})
		if err != nil || !ok {
			return err
		}
		r.nominated = append(r.nominated, nom)
		r.wake(nominationRetry)
	}
	return nil
}

// preemptOne looks for victims for the one instance of one and, when a node has them,
// holds the room there, has record store the nomination and asks the victims to stop.
// nom names the instance (Index, the index one asks for and the hold is known by; Step
// for a workflow's) and when it was decided (At). ok is false when no node has victims.
// The nomination is stored before any victim is asked: a leader that fails in between
// leaves a nomination the next one completes, never victims without a preemptor.
func (c *base) preemptOne(ctx context.Context, one *scheduler.Request, by preemptor, nom v4.Nomination, opts scheduler.Options,
	record func(v4.Nomination) error) (_ v4.Nomination, ok bool, _ error) {
	var p *scheduler.Preemption
	c.feed.With(func(s *scheduler.Snapshot) {
		if p = s.Preempt(one, opts); p != nil {
			s.NominateCards(one, nom.Index, p.Node, p.GPUs, opts)
		}
	})
	if p == nil {
		return v4.Nomination{}, false, nil
	}
	nom.Node, nom.GPUs, nom.At = p.Node, p.GPUs, nom.At.UTC().Truncate(time.Second)
	for _, v := range p.Victims {
		nom.Victims = append(nom.Victims, v4.VictimID(v.Namespace, v.Name))
	}
	if err := record(nom); err != nil {
		c.feed.With(func(s *scheduler.Snapshot) { s.ClearNomination(by.key, nom.Index) })
		return v4.Nomination{}, false, fmt.Errorf("record the preemption of %s: %w", by.what, err)
	}
	c.event(by.key, v4.EventNormal, "Preempting", fmt.Sprintf("%s (priority %d) preempts %d task groups of lower priority on node %s",
		by.what, by.prio, len(nom.Victims), p.Node))
	c.stopVictims(ctx, by, nom)
	return nom, true, nil
}

// oneIndex is req for instance idx alone: what one preemption or one hold is about (a
// workflow step's idx is its nomination's slot, the index its hold is known by).
func oneIndex(req *scheduler.Request, idx int) *scheduler.Request {
	one := *req
	one.Indexes = []int{idx}
	return &one
}

// nominationExpired reports whether nom waited for its victims past nominationTimeout:
// its hold is then dropped and its owner told, and the instance is placed afresh.
func (c *base) nominationExpired(by preemptor, nom v4.Nomination, now time.Time) bool {
	if now.Sub(nom.At) <= nominationTimeout {
		return false
	}
	c.feed.With(func(s *scheduler.Snapshot) { s.ClearNomination(by.key, nom.Index) })
	c.event(by.key, v4.EventWarning, "NominationExpired", fmt.Sprintf("%s waited %s for its victims on node %s: placed afresh",
		by.what, nominationTimeout, nom.Node))
	return true
}

// placeOnNomination places req's instance nom.Index on its nominated node, holding the
// room again first when the snapshot lost the hold (a new leader's, or a feed that
// listed afresh).
func placeOnNomination(s *scheduler.Snapshot, req *scheduler.Request, nom v4.Nomination, opts scheduler.Options) scheduler.Result {
	if s.Nominated(req.App, nom.Index) != nom.Node {
		s.NominateCards(req, nom.Index, nom.Node, nom.GPUs, opts)
	}
	return s.PlaceNominated(req, nom.Node, opts)
}

// stopVictims asks the victims of a nomination that still run to stop, each once. They
// are found among the task groups of the nomination's node by their VictimID.
func (c *base) stopVictims(ctx context.Context, by preemptor, nom v4.Nomination) {
	who := by.String()
	tgs, err := c.tgs.onNode(ctx, nom.Node)
	if err != nil {
		c.log.Warn("preempt", "node", nom.Node, "err", err)
		return
	}
	for _, tg := range tgs {
		if !slices.Contains(nom.Victims, v4.VictimID(tg.Metadata.Namespace, tg.Metadata.Name)) || stopping(tg) || ended(tg) {
			continue
		}
		if err := c.evict(ctx, tg, by.key, who); err != nil {
			c.log.Warn("preempt", "taskgroup", tg.Metadata.Name, "err", err)
			continue
		}
		owner := scheduler.AppKey{Kind: tg.Spec.Owner.Kind, Namespace: tg.Metadata.Namespace, Name: tg.Spec.Owner.Name}
		c.event(owner, v4.EventWarning, "Preempted", fmt.Sprintf("instance %d (%s, priority %d) on node %s is stopped for %s",
			tg.Spec.Index, tg.Metadata.Name, tg.Spec.Priority, tg.Spec.Node, who))
	}
}

// evict asks a victim to stop with its kill grace period, naming the preemptor.
func (c *base) evict(ctx context.Context, tg *v4.TaskGroup, preemptor scheduler.AppKey, by string) error {
	cp := *tg // the cache's object: write a copy
	cp.Spec.Desired = v4.DesiredStopped
	cp.Metadata.Annotations = maps.Clone(tg.Metadata.Annotations)
	if cp.Metadata.Annotations == nil {
		cp.Metadata.Annotations = map[string]string{}
	}
	cp.Metadata.Annotations[stopRequestedAnnotation] = time.Now().UTC().Format(time.RFC3339)
	cp.Metadata.Annotations[v4.PreemptedByAnnotation] = by
	cp.Metadata.Annotations[v4.PreemptorAnnotation] = string(preemptor.Kind) + "/" + preemptor.Namespace + "/" + preemptor.Name
	if err := c.store.Update(ctx, &cp, store.Raw{}); err != nil {
		return fmt.Errorf("stop %s: %w", tg.Metadata.Name, err)
	}
	c.wrote(&cp)
	return nil
}

// preempted reports whether a run was stopped by a preemption.
func preempted(tg *v4.TaskGroup) bool { return tg.Metadata.Annotations[v4.PreemptedByAnnotation] != "" }

// asFailed is an ended preempted run as its restart policy judges it: failed, so that
// OnFailure and Always place it again (after their backoff) and Never does not.
func asFailed(tg *v4.TaskGroup) *v4.TaskGroup {
	cp := *tg
	cp.Status.Phase, cp.Spec.Desired = v4.StatusFailed, v4.DesiredRunning
	return &cp
}

// syncBudget gives the scheduler the workload's disruption budget.
func (c *AppController) syncBudget(key scheduler.AppKey, w *v4.Workload) {
	c.feed.With(func(s *scheduler.Snapshot) { setBudget(s, key, w) })
}

// restoreNominations runs once the caches are loaded, before any placement: every
// workload's budget and the holds of its nominations go into the snapshot, so that a new
// leader places nothing lower into the room a preemption freed (plan_state.go).
func (c *AppController) restoreNominations(ctx context.Context, _ func(func())) error {
	opts := c.placeOptions()
	for _, kind := range appKinds {
		objs, _, err := c.apps[kind].cache.List("", "")
		if err != nil {
			return err
		}
		for _, o := range objs {
			c.feed.With(func(s *scheduler.Snapshot) { restoreOwner(s, o, opts) })
		}
	}
	return ctx.Err()
}

// clearStaleHolds drops the snapshot's holds of key that its pass did not keep: the
// instance was placed (perhaps by a leader that failed before it cleared the status), or
// the nomination expired. It drops every hold of key the snapshot has, not only those of
// the nominations the pass read: a hold put back from a status read a moment before
// the nomination was cleared (RestoreOwners) goes at the owner's next pass.
func (c *base) clearStaleHolds(key scheduler.AppKey, kept []v4.Nomination) {
	c.feed.With(func(s *scheduler.Snapshot) {
		for _, idx := range s.Holds(key) {
			if _, ok := nominationOf(kept, idx); !ok {
				s.ClearNomination(key, idx)
			}
		}
	})
}

// forgetPreemption drops a deleted workload's budget and holds from the snapshot.
func (c *AppController) forgetPreemption(key scheduler.AppKey) {
	c.feed.With(func(s *scheduler.Snapshot) {
		s.RemoveDisruptionBudget(key)
		s.ClearNominations(key)
	})
}

// preemptorOf is the preemptor a victim was stopped for (PreemptorAnnotation).
func preemptorOf(tg *v4.TaskGroup) (scheduler.AppKey, bool) {
	parts := strings.SplitN(tg.Metadata.Annotations[v4.PreemptorAnnotation], "/", 3)
	if len(parts) != 3 {
		return scheduler.AppKey{}, false
	}
	return scheduler.AppKey{Kind: v4.Kind(parts[0]), Namespace: parts[1], Name: parts[2]}, true
}
