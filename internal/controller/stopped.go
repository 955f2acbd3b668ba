package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// Stopped instances (docs/lifecycle.md, "Stopped instances"): an index listed in the
// workload's spec.stoppedInstances keeps its current run, asked to stop as for a
// delete (a graceful kill through the agent), and nothing replaces it: no restart
// policy, no move, no placement of a missing run. The ended run stays bound to its node,
// holding its place there (resources, ports), as deployd's stopped container did; a
// start places a new run on that node when it fits, anywhere else when it does not.

// stoppedInstance handles a wanted index stopped on purpose.
func (r *pass) stoppedInstance(ctx context.Context, idx int, rs runs) error {
	r.stopped++
	r.wake(r.c.removeAll(ctx, rs.old))
	if rs.pending != nil { // a move's replacement: the instance goes nowhere
		r.wake(r.c.removeAll(ctx, []*v4.TaskGroup{rs.pending}))
	}
	cur := rs.cur
	if cur.Spec.Desired != v4.DesiredStopped {
		r.c.eventOnce(cur.Metadata.Name, "Stopping", r.key, v4.EventNormal, "StoppingInstance",
			fmt.Sprintf("instance %d (%s): stopping on request; it stays stopped until started", idx, cur.Metadata.Name))
		if err := r.c.markStopped(ctx, cur, false); err != nil { // stopped, not ended: its volumes stay
			return err
		}
		r.stopping = true
		r.wake(stopWait(cur))
		return nil
	}
	if !ended(cur) {
		r.stopping = true
		// The agent reports the end; a node that does not answer is declared lost by the
		// node lifecycle. Either way the run stays: it is where the instance was.
		r.wake(stopWait(cur))
	}
	return nil
}

// stopWait is when to look again at a run asked to stop: after its grace period.
func stopWait(tg *v4.TaskGroup) time.Duration {
	return time.Duration(max(tg.Spec.KillGracePeriod, 1))*time.Second + time.Second
}

// startStopped places again an instance whose ended run was stopped (on request, or by
// a scale-down now undone): on the run's node if it fits, else anywhere (placeMissing).
// It is not a restart: the counts of restarts carry over unchanged.
func (r *pass) startStopped(idx int, cur *v4.TaskGroup) {
	r.c.eventOnce(cur.Metadata.Name, "Starting", r.key, v4.EventNormal, "StartingInstance",
		fmt.Sprintf("instance %d: starting again, on node %s if it fits (%s was stopped)", idx, cur.Spec.Node, cur.Metadata.Name))
	r.attempts[idx] = restartInfo{attempt: cur.Spec.ReschedTimes, recent: cur.Spec.RecentRestarts, prev: cur, retainUntil: r.now, start: true}
	r.missing = append(r.missing, idx)
}

// markStopped writes tg wanted Stopped, with the time it was asked (remove's limit).
func (c *base) markStopped(ctx context.Context, tg *v4.TaskGroup, instanceEnds bool) error {
	cp := *tg // tg may be the shared cache's object: write a copy
	tg = &cp
	tg.Spec.Desired = v4.DesiredStopped
	// A new map: the copy shares its maps with the cached object.
	tg.Metadata.Annotations = maps.Clone(tg.Metadata.Annotations)
	if tg.Metadata.Annotations == nil {
		tg.Metadata.Annotations = map[string]string{}
	}
	tg.Metadata.Annotations[stopRequestedAnnotation] = time.Now().UTC().Format(time.RFC3339)
	if instanceEnds { // its instance volumes go (docs/spec.md)
		tg.Metadata.Annotations[v4.InstanceEndsAnnotation] = "true"
	}
	if err := c.store.Update(ctx, tg, store.Raw{}); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("stop %s: %w", tg.Metadata.Name, err)
	}
	c.wrote(tg)
	return nil
}
