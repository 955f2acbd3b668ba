package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// pass is one reconcile of one application.
type pass struct {
	c        *AppController
	key      scheduler.AppKey
	obj      v4.Object
	w        *v4.Workload
	now      time.Time
	missing  []int               // indexes to place now
	moves    []moveReq           // moves to start now (move.go)
	attempts map[int]restartInfo // replacements: their reschedTimes
	next     time.Duration       // when to look again (0: only on events)
	phases   []string            // current phase of every wanted index
	message  string
	surplus  bool                 // task groups of indexes beyond spec.instance are still there
	backOff  []v4.InstanceBackOff // instances waiting for their restart
	pending  *v4.Pending          // why instances wait for a node (pending.go)
	stopped  int                  // instances stopped on request (stopped.go)
	stopping bool                 // one of them still runs
	// nominated are the instances waiting for their preemption's victims (preempt.go).
	nominated []v4.Nomination
}

type restartInfo struct {
	attempt    int
	crashLoops int
	recent     []time.Time // the instance's restarts within the storm window, this one last
	// prev is the ended run, kept until its replacement is placed when hostRetainTime
	// pins the replacement to prev's node until retainUntil.
	prev        *v4.TaskGroup
	retainUntil time.Time
	// portRetries is the replacement's PortRetries; taken are the ports the ended run
	// found taken, by node, which the replacement is kept off (portretry.go).
	portRetries int
	taken       map[string][]int
	// start is set for the start of a stopped instance (stopped.go): not a restart, and
	// placed anywhere when prev's node cannot take it.
	start bool
}

func (r *pass) wake(d time.Duration) {
	if d > 0 && (r.next == 0 || d < r.next) {
		r.next = d
	}
}

// instance handles the current run of a wanted index: nothing while it runs; the restart
// policy once it ended.
func (r *pass) instance(ctx context.Context, idx int, cur *v4.TaskGroup) error {
	phase := cur.Status.Phase
	if phase == "" {
		phase = v4.StatusStaging
	}
	r.c.observe(cur, phase)
	if preempted(cur) && ended(cur) { // its restart policy decides (preempt.go)
		cur, phase = asFailed(cur), v4.StatusFailed
	} else if cur.Spec.Desired == v4.DesiredStopped && ended(cur) { // stopped, wanted again (a start, a scale-up)
		r.startStopped(idx, cur)
		return nil
	}
	if cur.Spec.Desired == v4.DesiredStopped { // still stopping, wanted again: replace once gone
		r.phases = append(r.phases, phase)
		r.wake(r.c.removeAll(ctx, []*v4.TaskGroup{cur}))
		return nil
	}
	if !v4.Terminal(phase) && phase != v4.StatusLost {
		r.phases = append(r.phases, phase)
		return nil
	}
	plan := planRestart(r.w.RestartPolicy, cur, r.now)
	if !plan.restart {
		r.phases = append(r.phases, phase)
		r.c.eventOnce(cur.Metadata.Name, "NotRestarted", r.key, v4.EventWarning, "NotRestarted",
			fmt.Sprintf("instance %d (%s) is %s and stays so: %s", idx, cur.Metadata.Name, phase, plan.reason))
		if r.message == "" {
			r.message = fmt.Sprintf("instance %d: %s", idx, plan.reason)
		}
		return nil
	}
	if wait := plan.at.Sub(r.now); wait > 0 {
		r.phases = append(r.phases, phase)
		r.waitForRestart(idx, cur, plan, wait)
		return nil
	}
	if e, on := r.c.store.InMaintenance(ctx); on {
		r.phases = append(r.phases, phase)
		r.c.eventOnce(cur.Metadata.Name, "RestartHeld", r.key, v4.EventWarning, "RestartHeld",
			fmt.Sprintf("instance %d (%s) is %s and is not restarted while the engine is in maintenance (%s); `berth maintenance off` resumes restarts",
				idx, cur.Metadata.Name, phase, maintenanceReason(e)))
		r.wake(maintenanceRecheck)
		return nil
	}
	info := restartInfo{attempt: plan.attempt, crashLoops: plan.crashLoops, recent: recentRestarts(cur, r.now),
		portRetries: plan.portRetries, taken: takenPorts(cur)}
	if plan.portRetries > 0 { // not a restart: the storm count stays
		info.recent = cur.Spec.RecentRestarts
	}
	if until := retainUntil(r.w.RestartPolicy, plan); r.now.Before(until) {
		// The old run stays (it records the node) until the replacement is placed there.
		info.prev, info.retainUntil = cur, until
	} else if err := r.c.deleteTG(ctx, cur); err != nil {
		return err
	}
	// With hostRetainTime the old run may wait here for several passes: report once.
	if plan.portRetries > 0 {
		r.c.eventOnce(cur.Metadata.Name, "PortConflict", r.key, v4.EventWarning, "PortConflict",
			portRetryMessage(fmt.Sprintf("instance %d", idx), cur, plan.portRetries))
	} else {
		r.c.eventOnce(cur.Metadata.Name, "Restarting", r.key, v4.EventNormal, "Restarting",
			fmt.Sprintf("instance %d: replacing %s (%s), restart %d", idx, cur.Metadata.Name, phase, plan.attempt))
	}
	if plan.portRetries == 0 && stormStarts(info.recent) {
		r.c.recordOnce("storm/"+cur.Metadata.Name, "storm", stormEvent(r.key, cur, info.recent))
	}
	r.attempts[idx] = info
	r.missing = append(r.missing, idx)
	return nil
}

// retainUntil is when a restart's replacement may leave the old node: BCS's
// hostRetainTime (seconds) from the moment the restart may start.
func retainUntil(p *v4.RestartPolicy, plan restartPlan) time.Time {
	if p == nil || p.HostRetainTime <= 0 || plan.lostGrace {
		return time.Time{}
	}
	return plan.at.Add(time.Duration(p.HostRetainTime) * time.Second)
}

// placeMissing places the missing indexes through the scheduler and writes their task
// groups; what fits nowhere is retried later with the reason in the status.
func (r *pass) placeMissing(ctx context.Context) error {
	if len(r.missing) == 0 {
		return nil
	}
	slices.Sort(r.missing)
	var free []int
	for _, idx := range r.missing {
		if a := r.attempts[idx]; a.prev != nil {
			done, err := r.placeRetained(ctx, idx, a)
			if err != nil {
				return err
			}
			if done {
				continue
			}
		}
		free = append(free, idx)
	}
	free, err := r.placeNominated(ctx, free) // preempt.go
	if err != nil || len(free) == 0 {
		return err
	}
	req, err := scheduler.RequestFor(r.obj, free)
	if err != nil {
		r.message = err.Error()
		return nil
	}
	for _, idx := range free {
		addTakenPorts(req, r.attempts[idx].taken)
	}
	res, err := r.place(ctx, req, nil)
	if err != nil {
		return err
	}
	if err := r.preempt(ctx, req, res.Unplaced); err != nil {
		return err
	}
	if len(res.Unplaced) > 0 {
		r.message = fmt.Sprintf("%d of %d instances cannot be placed: %s", len(res.Unplaced), r.w.Spec.Instance, res.Reason)
		r.c.eventOnce(r.key.String(), r.message, r.key, v4.EventWarning, "FailedScheduling", r.message)
		r.unschedulable(res)
		r.wake(unplacedRetry)
	} else {
		r.c.forget(r.key.String())
	}
	return nil
}

// place runs the scheduler for req and writes the task groups of what it placed. prev,
// when set, is an ended run the placement replaces: it holds nothing any more (its ports
// and resources are free for its replacement), and is accounted again if nothing fits.
func (r *pass) place(ctx context.Context, req *scheduler.Request, prev *v4.TaskGroup) (scheduler.Result, error) {
	return r.placeBy(ctx, req, func(s *scheduler.Snapshot, opts scheduler.Options) scheduler.Result {
		if prev != nil {
			s.RemoveTaskGroup(prev.Metadata.Namespace, prev.Metadata.Name)
		}
		res := r.c.opts.Metrics.place(s, req, opts)
		if prev != nil && len(res.Placements) == 0 {
			s.SetTaskGroup(prev)
		}
		return res
	})
}

// placeBy runs placeOn on the snapshot for req and writes the task groups it placed.
func (r *pass) placeBy(ctx context.Context, req *scheduler.Request, placeOn func(*scheduler.Snapshot, scheduler.Options) scheduler.Result) (scheduler.Result, error) {
	// The placement continues the trace of the change that asked for it (an apply).
	ctx, span := tracing.StartFrom(ctx, tracer, r.obj.GetMeta(), r.now, "schedule", trace.WithAttributes(
		attribute.String("berth.kind", string(r.key.Kind)), attribute.String("berth.namespace", r.key.Namespace),
		attribute.String("berth.name", r.key.Name), attribute.Int("berth.instances", len(req.Indexes))))
	defer span.End()
	var res scheduler.Result
	opts := r.c.placeOptions()
	r.c.feed.With(func(s *scheduler.Snapshot) { res = placeOn(s, opts) })
	span.SetAttributes(attribute.Int("berth.placed", len(res.Placements)), attribute.Int("berth.unplaced", len(res.Unplaced)))
	if len(res.Unplaced) > 0 {
		span.SetAttributes(attribute.String("berth.unplaced_reason", res.Reason.String()))
	}
	if len(res.Placements) == 0 {
		return res, nil
	}
	tgs := make([]*v4.TaskGroup, len(res.Placements))
	for i, p := range res.Placements {
		tgs[i] = r.newTaskGroup(req, p)
		tracing.Stamp(ctx, &tgs[i].Metadata, r.now) // the agent that starts it goes on with this trace
	}
	// One transaction and one event for the pass's placements, however many.
	created, err := r.c.createAll(ctx, tgs)
	var placed []scheduler.Placement
	for i, p := range res.Placements {
		if created[i] {
			placed = append(placed, p)
			r.phases = append(r.phases, v4.StatusStaging)
		}
	}
	if len(placed) > 0 {
		r.c.event(r.key, v4.EventNormal, "Scheduled", scheduledMessage(placed))
	}
	return res, err
}

// placeRetained places a restart's replacement on the old run's node (hostRetainTime):
// once it is placed, the old run goes; while that node cannot take it, the instance
// waits, and is placed anywhere when the time is up. The start of a stopped instance
// does not wait: when the node cannot take it, the old run goes and done is false, for
// the caller to place it anywhere.
func (r *pass) placeRetained(ctx context.Context, idx int, a restartInfo) (done bool, err error) {
	req, err := scheduler.RequestFor(r.obj, []int{idx})
	if err != nil {
		r.message = err.Error()
		return true, nil
	}
	req.Node = a.prev.Spec.Node
	addTakenPorts(req, a.taken)
	res, err := r.place(ctx, req, a.prev)
	if err != nil {
		return true, err
	}
	if len(res.Placements) > 0 {
		return true, r.c.deleteTG(ctx, a.prev)
	}
	if a.start {
		return false, r.c.deleteTG(ctx, a.prev)
	}
	r.phases = append(r.phases, a.prev.Status.Phase)
	wait := a.retainUntil.Sub(r.now)
	// The message names the time the wait ends, not the time left: it stays the same from
	// pass to pass, so a wait that goes on writes no new status.
	msg := fmt.Sprintf("instance %d waits for node %s (hostRetainTime, until %s): %s", idx, req.Node,
		a.retainUntil.UTC().Format(time.TimeOnly), res.Reason)
	r.c.eventOnce("retain/"+a.prev.Metadata.Name, "waiting", r.key, v4.EventNormal, "WaitingForHost", msg)
	if r.message == "" {
		r.message = msg
	}
	r.waitingForHost(idx, req.Node, a.retainUntil, res)
	r.wake(min(unplacedRetry, wait))
	return true, nil
}

func (r *pass) newTaskGroup(req *scheduler.Request, p scheduler.Placement) *v4.TaskGroup {
	tg := newTaskGroup(r.obj, r.w.KillPolicy, &r.w.Spec.Template, req, p, r.now)
	if a, ok := r.attempts[p.Index]; ok {
		tg.Spec.ReschedTimes, tg.Spec.LastRescheduled, tg.Spec.RecentRestarts = a.attempt, r.now, a.recent
		tg.Spec.CrashLoops, tg.Spec.PortRetries = a.crashLoops, a.portRetries
		if a.start { // not a restart (a rollout takes a recent one for a failure)
			tg.Spec.LastRescheduled = a.prev.Spec.LastRescheduled
		}
	}
	return tg
}

// status aggregates the wanted instances with BCS's precedence.
func (r *pass) status() v4.WorkloadStatus {
	running := r.w.Spec.Instance - r.stopped // the instances wanted running
	st := v4.WorkloadStatus{Phase: v4.AggregateApplication(r.phases, running), Instances: r.w.Spec.Instance, Message: r.message,
		Pending: r.pendingStatus(), Stopped: r.stopped, Nominated: r.nominated}
	if running == 0 { // scaled to zero or every instance stopped: what still runs is stopping
		st.Phase = v4.AppStopped
		if r.surplus || r.stopping {
			st.Phase = v4.AppStopping
		}
	}
	if st.Message == "" && r.stopped > 0 {
		st.Message = v4.StoppedMessage(r.w.Spec.StoppedInstances, r.w.Spec.Instance) + " (berth start starts one again)"
	}
	if len(r.backOff) > 0 {
		st.BackOff = r.backOff[:min(len(r.backOff), v4.MaxBackOffListed)]
		if st.Message == "" {
			b := r.backOff[0]
			st.Message = fmt.Sprintf("instance %d: %s, restart %d at %s (%s)", b.Index, b.Reason, b.Restart,
				b.RestartAt.UTC().Format(time.TimeOnly), b.LastExit)
			if n := len(r.backOff); n > 1 {
				st.Message += fmt.Sprintf("; %d instances wait to restart", n)
			}
		}
	}
	for _, p := range r.phases {
		if p == v4.StatusRunning || p == v4.StatusRestarting {
			st.Running++
		}
	}
	return st
}

// waitForRestart records that instance idx waits wait before its restart: in the status,
// and once per run as an event (a Warning in a crash loop).
func (r *pass) waitForRestart(idx int, cur *v4.TaskGroup, plan restartPlan, wait time.Duration) {
	b := v4.InstanceBackOff{Index: idx, TaskGroup: cur.Metadata.Name, Reason: "BackOff", RestartAt: plan.at.UTC(),
		Restart: plan.attempt, LastExit: lastExit(cur)}
	typ, msg := v4.EventNormal, fmt.Sprintf("instance %d (%s) is %s (%s); restarting in %s (restart %d)",
		idx, cur.Metadata.Name, cur.Status.Phase, b.LastExit, wait.Round(time.Second), plan.attempt)
	if plan.lostGrace {
		msg = fmt.Sprintf("instance %d (%s) is Lost with its node; replaced elsewhere in %s unless the node comes back (restart %d)",
			idx, cur.Metadata.Name, wait.Round(time.Second), plan.attempt)
	}
	if plan.crashLoop {
		b.Reason, typ = "CrashLoopBackOff", v4.EventWarning
		msg = fmt.Sprintf("instance %d (%s) ended %s after it started, %d times in a row (%s); restarting in %s (restart %d)",
			idx, cur.Metadata.Name, runTime(cur), plan.crashLoops, b.LastExit, wait.Round(time.Second), plan.attempt)
	}
	r.c.eventOnce(cur.Metadata.Name, b.Reason, r.key, typ, b.Reason, msg)
	r.backOff = append(r.backOff, b)
	r.wake(wait)
}

// runTime is how long an ended run ran ("at once" when it never started).
func runTime(tg *v4.TaskGroup) string {
	st := tg.Status
	if st.StartedAt.IsZero() || st.FinishedAt.Before(st.StartedAt) {
		return "at once"
	}
	return st.FinishedAt.Sub(st.StartedAt).Round(time.Second).String()
}
