package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
)

// Preemption for jobs' runs, as for applications' instances (preempt.go): the nomination
// goes into the job's status before its victims are asked to stop; later passes place the
// run on its node once they are gone. A job's own task groups are never victims.

func (p *jobPass) nominationFor(idx int) (v4.Nomination, bool) {
	for _, n := range p.job.Status.Nominated {
		if n.Index == idx {
			return n, true
		}
	}
	return v4.Nomination{}, false
}

// placeNominated places the runs of idxs that hold a nominated node there and returns
// the others; a run whose victims still stop keeps its nomination and waits.
func (p *jobPass) placeNominated(ctx context.Context, idxs []int) ([]int, error) {
	var rest []int
	for _, idx := range idxs {
		nom, ok := p.nominationFor(idx)
		if !ok {
			rest = append(rest, idx)
			continue
		}
		req, err := scheduler.RequestFor(p.job, []int{idx})
		if err != nil {
			return nil, err
		}
		if p.now.Sub(nom.At) > nominationTimeout {
			p.c.feed.With(func(s *scheduler.Snapshot) { s.ClearNomination(p.key, idx) })
			p.c.event(p.key, v4.EventWarning, "NominationExpired", fmt.Sprintf("run %d waited %s for its victims on node %s: placed afresh",
				idx, nominationTimeout, nom.Node))
			rest = append(rest, idx)
			continue
		}
		p.c.stopVictims(ctx, p.key, idx, req.Priority, nom)
		var res scheduler.Result
		opts := scheduler.Options{Strategy: p.c.opts.Placement, Cluster: p.c.opts.Cluster}
		p.c.feed.With(func(s *scheduler.Snapshot) {
			if s.Nominated(p.key, idx) != nom.Node {
				s.NominateCards(req, idx, nom.Node, nom.GPUs, opts)
			}
			res = s.PlaceNominated(req, nom.Node, opts)
		})
		if err := p.createRuns(ctx, req, res); err != nil {
			return nil, err
		}
		if len(res.Placements) == 0 {
			p.nominated = append(p.nominated, nom)
			p.note(fmt.Sprintf("run %d waits on node %s for %d preempted task groups to stop", idx, nom.Node, len(nom.Victims)))
			p.wake(nominationRetry)
		}
	}
	return rest, nil
}

// preempt looks for victims for the runs left unplaced, records each nomination in the
// job's status and stops its victims.
func (p *jobPass) preempt(ctx context.Context, req *scheduler.Request, unplaced []int) error {
	if req.NoPreempt {
		return nil
	}
	opts := scheduler.Options{Strategy: p.c.opts.Placement, Cluster: p.c.opts.Cluster}
	for _, idx := range unplaced[:min(len(unplaced), maxPreemptionsPerPass)] {
		if len(p.nominated) >= v4.MaxNominations {
			return nil
		}
		one := *req
		one.Indexes = []int{idx}
		var pre *scheduler.Preemption
		p.c.feed.With(func(s *scheduler.Snapshot) {
			if pre = s.Preempt(&one, opts); pre != nil {
				s.NominateCards(&one, idx, pre.Node, pre.GPUs, opts)
			}
		})
		if pre == nil {
			return nil
		}
		nom := v4.Nomination{Index: idx, Node: pre.Node, At: p.now.Truncate(time.Second), GPUs: pre.GPUs}
		for _, v := range pre.Victims {
			nom.Victims = append(nom.Victims, v4.VictimID(v.Namespace, v.Name))
		}
		st := p.job.Status // stored before any victim stops (a new leader completes it)
		st.Nominated = append(slices.Clone(p.nominated), nom)
		if err := p.c.updateJobStatus(ctx, p.key, st); err != nil {
			p.c.feed.With(func(s *scheduler.Snapshot) { s.ClearNomination(p.key, idx) })
			return fmt.Errorf("record the preemption of run %d: %w", idx, err)
		}
		p.job.Status.Nominated = st.Nominated
		p.nominated = append(p.nominated, nom)
		p.c.event(p.key, v4.EventNormal, "Preempting", fmt.Sprintf("run %d (priority %d) preempts %d task groups of lower priority on node %s",
			idx, one.Priority, len(nom.Victims), pre.Node))
		p.c.stopVictims(ctx, p.key, idx, one.Priority, nom)
		p.wake(nominationRetry)
	}
	return nil
}

// clearStaleHolds drops the holds of nominations this pass did not keep.
func (p *jobPass) clearStaleHolds() {
	for _, n := range p.job.Status.Nominated {
		if !slices.ContainsFunc(p.nominated, func(k v4.Nomination) bool { return k.Index == n.Index }) {
			p.c.feed.With(func(s *scheduler.Snapshot) { s.ClearNomination(p.key, n.Index) })
		}
	}
}

// restoreNominations puts the holds of every job's nominations into the snapshot before
// any placement of a new leader (plan_state.go).
func (c *JobController) restoreNominations(ctx context.Context, _ func(func())) error {
	objs, _, err := c.jobs.cache.List("", "")
	if err != nil {
		return err
	}
	opts := scheduler.Options{Strategy: c.opts.Placement, Cluster: c.opts.Cluster}
	for _, o := range objs {
		c.feed.With(func(s *scheduler.Snapshot) { restoreOwner(s, o, opts) })
	}
	return ctx.Err()
}
