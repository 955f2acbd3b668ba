package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// Moves (drift) of one instance: a task group annotated v4.MoveToAnnotation gets a
// replacement of the same index on another node; the old run keeps serving until the
// replacement is Running and, with local health checks, Healthy; then it is stopped
// gracefully. deployd removed the old pod first and slept 10 s before deploying the new
// one, so every drift was an outage of that instance; berth starts the new one first.

// moveWait is how long an OpMove may wait for its task group's annotation before the
// controller takes the request as abandoned (the server writes the operation first).
const moveWait = 30 * time.Second

// runs are the task groups of one wanted index as reconcile sees them.
type runs struct {
	cur     *v4.TaskGroup   // the run that counts for the index (status, restarts)
	pending *v4.TaskGroup   // a move's replacement that is not ready yet
	old     []*v4.TaskGroup // to stop and remove
	moved   *v4.TaskGroup   // the replacement that just became ready (cur)
	failed  *v4.TaskGroup   // a replacement that ended before it was ready
}

// splitRuns finds the current run of an index: normally the newest (tgs is sorted
// oldest first), but while a move is under way its source stays current and the
// replacement waits; the "older runs are removed" rule must not stop the source early.
func splitRuns(tgs []*v4.TaskGroup) runs {
	byName := make(map[string]*v4.TaskGroup, len(tgs))
	for _, tg := range tgs {
		byName[tg.Metadata.Name] = tg
	}
	var src, repl *v4.TaskGroup
	for _, tg := range tgs {
		s := byName[tg.Metadata.Annotations[v4.MovedFromAnnotation]]
		if s == nil || s == tg || !alive(s) {
			continue
		}
		if repl == nil || stopping(repl) { // prefer a replacement that is not being stopped
			src, repl = s, tg
		}
	}
	var r runs
	switch {
	case src == nil:
		r.cur = tgs[len(tgs)-1]
	case ready(repl) && !stopping(repl):
		r.cur, r.moved = repl, repl
	case ended(repl):
		r.cur, r.failed = src, repl
	case stopping(repl):
		r.cur = src
	default:
		r.cur, r.pending = src, repl
	}
	for _, tg := range tgs {
		if tg != r.cur && tg != r.pending {
			r.old = append(r.old, tg)
		}
	}
	return r
}

func ended(tg *v4.TaskGroup) bool {
	return v4.Terminal(tg.Status.Phase) || tg.Status.Phase == v4.StatusLost
}

func stopping(tg *v4.TaskGroup) bool { return tg.Spec.Desired == v4.DesiredStopped }

// alive: wanted and not ended.
func alive(tg *v4.TaskGroup) bool { return !stopping(tg) && !ended(tg) }

// ready is what a move waits for: Running, and Healthy when the pod has checks the agent
// runs (Healthy stays nil during their grace period, which is not yet healthy).
func ready(tg *v4.TaskGroup) bool {
	ok, _ := tg.Readiness()
	return ok
}

// moveReq is a move the pass places: a replacement of src's index.
type moveReq struct {
	src    *v4.TaskGroup
	target string // node name, v4.MoveAnywhere or v4.MoveAnywhereOrHere
}

// handleMove records what splitRuns found about the index's move and queues a new one.
func (r *pass) handleMove(ctx context.Context, rs runs) {
	switch {
	case rs.moved != nil:
		r.c.eventOnce("moved/"+rs.moved.Metadata.Name, "done", r.key, v4.EventNormal, "Moved",
			fmt.Sprintf("instance %d moved to %s as %s; stopping the old run", rs.moved.Spec.Index, rs.moved.Spec.Node, rs.moved.Metadata.Name))
	case rs.failed != nil:
		why := fmt.Sprintf("the replacement %s on %s is %s", rs.failed.Metadata.Name, rs.failed.Spec.Node, rs.failed.Status.Phase)
		if rs.failed.Status.Message != "" {
			why += ": " + rs.failed.Status.Message
		}
		r.moveFailed(ctx, rs.cur, why)
	case rs.pending != nil:
		phase := rs.pending.Status.Phase
		if phase == "" {
			phase = v4.StatusStaging
		}
		r.c.observe(rs.pending, phase)
		deadline := rs.pending.Metadata.CreationTimestamp.Add(r.c.opts.MoveDeadline)
		if wait := deadline.Sub(r.now); wait > 0 {
			r.wake(wait)
			return
		}
		// Not ready in time: the source stays; the replacement goes.
		r.wake(r.c.removeAll(ctx, []*v4.TaskGroup{rs.pending}))
		r.moveFailed(ctx, rs.cur, fmt.Sprintf("the replacement %s on %s was not ready within %s (%s)",
			rs.pending.Metadata.Name, rs.pending.Spec.Node, r.c.opts.MoveDeadline, phase))
	case alive(rs.cur) && rs.cur.Metadata.Annotations[v4.MoveToAnnotation] != "":
		r.moves = append(r.moves, moveReq{src: rs.cur, target: rs.cur.Metadata.Annotations[v4.MoveToAnnotation]})
	}
}

// placeMoves places the replacements of the requested moves, each pinned to its target
// node or kept off its current one.
func (r *pass) placeMoves(ctx context.Context) error {
	for _, m := range r.moves {
		req, err := scheduler.RequestFor(r.obj, []int{m.src.Spec.Index})
		if err != nil {
			r.moveFailed(ctx, m.src, err.Error())
			continue
		}
		var res scheduler.Result
		opts := scheduler.Options{Strategy: r.c.opts.Placement, Cluster: r.c.opts.Cluster}
		r.c.feed.With(func(s *scheduler.Snapshot) {
			res = placeMove(req, m.src, m.target, func(req *scheduler.Request) scheduler.Result { return r.c.opts.Metrics.place(s, req, opts) })
		})
		if len(res.Placements) == 0 {
			r.moveFailed(ctx, m.src, MoveUnplaceable(m.src, m.target, res.Reason))
			continue
		}
		p := res.Placements[0]
		tg := r.newTaskGroup(req, p)
		// A move is not a restart: the instance keeps its restart history.
		tg.Spec.ReschedTimes, tg.Spec.LastRescheduled = m.src.Spec.ReschedTimes, m.src.Spec.LastRescheduled
		tg.Spec.RecentRestarts = m.src.Spec.RecentRestarts
		tg.Metadata.Annotations = map[string]string{v4.MovedFromAnnotation: m.src.Metadata.Name}
		if err := r.c.store.Create(ctx, tg, store.Raw{}); err != nil {
			r.c.feed.With(func(s *scheduler.Snapshot) { s.RemoveTaskGroup(tg.Metadata.Namespace, tg.Metadata.Name) })
			return fmt.Errorf("create the replacement of %s: %w", m.src.Metadata.Name, err)
		}
		r.c.wrote(tg)
		r.c.event(r.key, v4.EventNormal, "Moving", fmt.Sprintf("instance %d: moving %s from %s to %s as %s; the old run serves until the new one is ready",
			m.src.Spec.Index, m.src.Metadata.Name, m.src.Spec.Node, p.Node, p.Name))
	}
	return nil
}

// placeMove places a move's replacement with place: on its target node, or away from its
// current one; for v4.MoveAnywhereOrHere on the current one when no other takes it (the
// node is preferred last, as a move is asked to leave it).
func placeMove(req *scheduler.Request, src *v4.TaskGroup, target string, place func(*scheduler.Request) scheduler.Result) scheduler.Result {
	switch target {
	case v4.MoveAnywhere, v4.MoveAnywhereOrHere, "":
		req.AvoidNode = src.Spec.Node
	default:
		req.Node = target
	}
	res := place(req)
	if len(res.Placements) > 0 || target != v4.MoveAnywhereOrHere {
		return res
	}
	req.AvoidNode, req.Node = "", src.Spec.Node
	return place(req)
}

// MoveUnplaceable says why no node takes a moved instance, with the scheduler's reason.
func MoveUnplaceable(src *v4.TaskGroup, target string, reason *scheduler.Reason) string {
	why := "no reason given"
	if reason != nil {
		why = reason.String()
	}
	switch target {
	case v4.MoveAnywhere, "":
		return fmt.Sprintf("no node other than %s can take instance %d: %s", src.Spec.Node, src.Spec.Index, why)
	case v4.MoveAnywhereOrHere:
		return fmt.Sprintf("no node, %s included (beside the run it replaces), can take instance %d: %s", src.Spec.Node, src.Spec.Index, why)
	}
	return fmt.Sprintf("node %s cannot take instance %d: %s", target, src.Spec.Index, why)
}

// moveFailed ends a move that cannot complete: the source keeps running, loses its
// request and records why (the drain controller reads it).
func (r *pass) moveFailed(ctx context.Context, src *v4.TaskGroup, why string) {
	r.c.eventOnce("movefailed/"+src.Metadata.Name, why, r.key, v4.EventWarning, "MoveFailed",
		fmt.Sprintf("instance %d (%s) stays on %s: %s", src.Spec.Index, src.Metadata.Name, src.Spec.Node, why))
	err := r.c.annotate(ctx, src, func(a map[string]string) {
		if a[v4.MoveToAnnotation] == "" {
			return
		}
		delete(a, v4.MoveToAnnotation)
		a[v4.MoveFailedAnnotation] = why
	})
	if err != nil {
		r.c.log.Warn("record a failed move", "taskgroup", src.Metadata.Name, "err", err)
		r.wake(2 * time.Second)
	}
}

// annotate changes a task group's annotations with a read-modify-write on its version,
// so an agent's status report in between is kept. fn may leave them unchanged.
func (c *AppController) annotate(ctx context.Context, tg *v4.TaskGroup, fn func(map[string]string)) error {
	return AnnotateTaskGroup(ctx, c.store, tg.Metadata.Namespace, tg.Metadata.Name, fn)
}

// AnnotateTaskGroup applies fn to the annotations of task group ns/name and writes them
// back when they changed, retrying when another writer got in between.
func AnnotateTaskGroup(ctx context.Context, st *store.Store, ns, name string, fn func(map[string]string)) error {
	tgs := store.Typed[*v4.TaskGroup](st, v4.KindTaskGroup)
	for range 5 {
		tg, err := tgs.Get(ctx, ns, name)
		if err != nil {
			return err
		}
		before := fmt.Sprint(tg.Metadata.Annotations)
		if tg.Metadata.Annotations == nil {
			tg.Metadata.Annotations = map[string]string{}
		}
		fn(tg.Metadata.Annotations)
		if fmt.Sprint(tg.Metadata.Annotations) == before {
			return nil
		}
		err = tgs.Update(ctx, tg, store.Raw{})
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("annotate task group %s/%s: %w", ns, name, store.ErrConflict)
}

// endMove ends the application's OpMove (op, the operation in progress, may be nil or
// another) once the task group it moves is no longer moving: moved (its old run is
// stopping or gone) or failed (MoveFailedAnnotation).
func (c *AppController) endMove(ctx context.Context, key scheduler.AppKey, op *v4.Operation, byIndex map[int][]*v4.TaskGroup, now time.Time) {
	if op == nil || op.Type != v4.OpMove {
		return
	}
	var target *v4.TaskGroup
	for _, tgs := range byIndex {
		for _, tg := range tgs {
			if tg.Metadata.Name == op.Target {
				target = tg
			}
		}
	}
	if target != nil && alive(target) {
		a := target.Metadata.Annotations
		switch {
		case a[v4.MoveToAnnotation] != "":
			return // under way
		case a[v4.MoveFailedAnnotation] == "" && now.Sub(op.Started) < moveWait:
			return // asked, the annotation not written yet
		}
	}
	c.endOperation(ctx, key, v4.OpMove)
}

// placedStamp is the placement time in a task group's name (BCS ID
// "{index}.{app}.{namespace}.{cluster}.{unixNano}"), 0 when it has none: it orders runs
// created in the same second, which creationTimestamp cannot.
func placedStamp(name string) int64 {
	i := strings.LastIndexByte(name, '.')
	n, err := strconv.ParseInt(name[i+1:], 10, 64)
	if err != nil {
		return 0
	}
	return n
}
