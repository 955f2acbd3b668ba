package controller

import (
	"context"
	"fmt"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
)

// Preemption for jobs' runs, as for applications' instances (preempt.go): the nomination
// goes into the job's status before its victims are asked to stop; later passes place the
// run on its node once they are gone. A job's own task groups are never victims.

// preemptor is the job's run idx, at priority prio.
func (p *jobPass) preemptor(idx int, prio int32) preemptor {
	return preemptor{key: p.key, what: fmt.Sprintf("run %d", idx), prio: prio}
}

// placeNominated places the runs of idxs that hold a nominated node there and returns
// the others; a run whose victims still stop keeps its nomination and waits.
func (p *jobPass) placeNominated(ctx context.Context, idxs []int) ([]int, error) {
	var rest []int
	for _, idx := range idxs {
		nom, ok := nominationOf(p.job.Status.Nominated, idx)
		if !ok {
			rest = append(rest, idx)
			continue
		}
		req, err := scheduler.RequestFor(p.job, []int{idx})
		if err != nil {
			return nil, err
		}
		by := p.preemptor(idx, req.Priority)
		if p.c.nominationExpired(by, nom, p.now) {
			rest = append(rest, idx)
			continue
		}
		p.c.stopVictims(ctx, by, nom)
		var res scheduler.Result
		opts := scheduler.Options{Strategy: p.c.opts.Placement, Cluster: p.c.opts.Cluster}
		p.c.feed.With(func(s *scheduler.Snapshot) { res = placeOnNomination(s, req, nom, opts) })
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
		one := oneIndex(req, idx)
		nom, ok, err := p.c.preemptOne(ctx, one, p.preemptor(idx, one.Priority), v4.Nomination{Index: idx, At: p.now}, opts, func(nom v4.Nomination) error {
			st := p.job.Status
			st.Nominated = append(slices.Clone(p.nominated), nom)
			if err := p.c.updateJobStatus(ctx, p.key, st); err != nil {
				return err
			}
			p.job.Status.Nominated = st.Nominated
			return nil
		})
		if err != nil || !ok {
			return err
		}
		p.nominated = append(p.nominated, nom)
		p.wake(nominationRetry)
	}
	return nil
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
