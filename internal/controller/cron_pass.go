package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/berthhq/berth/api/cron"
	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// cronPass is one reconcile of one cron object.
type cronPass struct {
	c     *CronController
	key   scheduler.AppKey
	obj   v4.Object
	sched *v4.CronSchedule
	now   time.Time
	runs  []v4.Object

	st     v4.CronStatus // the status being built
	active []v4.Object   // runs not finished, oldest first
}

func newCronPass(c *CronController, key scheduler.AppKey, obj v4.Object, runs []v4.Object, now time.Time) *cronPass {
	sched, st, _, _ := v4.CronParts(obj)
	return &cronPass{c: c, key: key, obj: obj, sched: sched, now: now, runs: runs, st: *st}
}

// run takes the decision the cron object's state calls for and returns when to look
// again: the schedule's next time (a run ending queues it too).
func (p *cronPass) run(ctx context.Context) (time.Duration, error) {
	p.observe(ctx)
	s, err := p.sched.Parse()
	if err != nil { // admitted once; a zone database without the zone now, say
		p.st.Message = "schedule: " + err.Error()
		return 0, p.c.writeStatus(ctx, p.obj, p.st)
	}
	last := p.st.LastScheduleTime
	if last.IsZero() {
		last = p.obj.GetMeta().CreationTimestamp
	}
	wait := untilNext(s, last, p.now)
	if p.sched.Suspend {
		p.st.Message = "suspended: no run starts until spec.suspend is false"
		return 0, p.c.writeStatus(ctx, p.obj, p.st)
	}
	var deadline time.Duration
	if d := p.sched.StartingDeadlineSeconds; d != nil {
		deadline = time.Duration(*d) * time.Second
	}
	due, n := s.MissedSince(last, p.now, deadline)
	if n == 0 {
		p.st.Message = ""
		return wait, p.c.writeStatus(ctx, p.obj, p.st)
	}
	if n > 1 {
		p.c.eventOnce("cron-missed/"+p.key.String(), due.String(), p.key, v4.EventWarning, "MissedRuns",
			fmt.Sprintf("%d scheduled runs were missed (no leader, or suspended); starting the latest only, scheduled for %s", n, due.UTC().Format(time.RFC3339)))
	}
	if len(p.active) >= p.c.maxActive && p.sched.ConcurrencyPolicy == v4.ConcurrencyAllow {
		p.st.Message = fmt.Sprintf("the run scheduled for %s waits: %d runs are active, the most a cron object may have",
			due.UTC().Format(time.RFC3339), len(p.active))
		p.c.eventOnce("cron-bound/"+p.key.String(), due.String(), p.key, v4.EventWarning, "TooManyActive", p.st.Message)
		return wait, p.c.writeStatus(ctx, p.obj, p.st)
	}
	if len(p.active) > 0 {
		switch p.sched.ConcurrencyPolicy {
		case v4.ConcurrencyForbid:
			// Kubernetes' rule: the time is not consumed, so it still starts once the
			// running one ends (within startingDeadlineSeconds).
			p.st.Message = fmt.Sprintf("the run scheduled for %s waits: %s still runs (concurrencyPolicy Forbid)",
				due.UTC().Format(time.RFC3339), p.active[0].GetMeta().Name)
			p.c.eventOnce("cron-forbid/"+p.key.String(), due.String(), p.key, v4.EventNormal, "JobAlreadyActive", p.st.Message)
			return wait, p.c.writeStatus(ctx, p.obj, p.st)
		case v4.ConcurrencyReplace:
			if !p.replace(ctx) {
				return 0, fmt.Errorf("replace the active runs of %s: a delete failed", p.key)
			}
		}
	}
	return wait, p.start(ctx, s, due)
}

// observe sorts the runs into active and finished, moves lastSuccessfulTime, prunes
// the history past its limits and lists the active runs in the status.
func (p *cronPass) observe(ctx context.Context) {
	slices.SortFunc(p.runs, byScheduled)
	var succeeded, failed []v4.Object
	for _, r := range p.runs {
		done, ok, fin := runState(r)
		switch {
		case !done:
			p.active = append(p.active, r)
		case ok:
			succeeded = append(succeeded, r)
			if fin.After(p.st.LastSuccessfulTime) {
				p.st.LastSuccessfulTime = fin.UTC()
			}
		default:
			failed = append(failed, r)
		}
	}
	keepOK, keepFailed := p.sched.HistoryLimits()
	for _, h := range []struct {
		runs []v4.Object
		keep int
	}{{succeeded, keepOK}, {failed, keepFailed}} {
		for _, r := range h.runs[:max(len(h.runs)-h.keep, 0)] { // the oldest
			p.c.deleteRun(ctx, r)
		}
	}
	p.listActive()
}

// listActive writes the active runs into the status, oldest first, bounded.
func (p *cronPass) listActive() {
	p.st.Active = nil
	for _, r := range p.active[:min(len(p.active), v4.MaxCronActive)] {
		run := v4.CronRun{Name: r.GetMeta().Name}
		if _, ok := r.GetMeta().Annotations[v4.ScheduledTimeAnnotation]; ok {
			run.ScheduledTime = scheduledAt(r).UTC()
		}
		p.st.Active = append(p.st.Active, run)
	}
}

// replace deletes the active runs (their controllers stop what they run) before a new
// one starts; false when one could not be deleted.
func (p *cronPass) replace(ctx context.Context) bool {
	for _, r := range p.active {
		if !p.c.deleteRun(ctx, r) {
			return false
		}
		p.c.event(p.key, v4.EventNormal, "Replaced", fmt.Sprintf("%s %s stopped and deleted: a new run is due (concurrencyPolicy Replace)",
			r.GetKind(), r.GetMeta().Name))
	}
	p.active = nil
	p.listActive()
	return true
}

// start creates the run scheduled for due and moves lastScheduleTime to due in the same
// transaction. A run of that name that exists was made by an earlier leader (or this
// one, before its status write was seen): the time is consumed, nothing starts twice.
func (p *cronPass) start(ctx context.Context, s *cron.Schedule, due time.Time) error {
	name := CronRunName(p.key.Name, due, s)
	run, err := NewCronRun(p.obj, name, due)
	if err != nil {
		p.st.Message = err.Error()
		return p.c.writeStatus(ctx, p.obj, p.st)
	}
	p.st.LastScheduleTime = due.UTC()
	p.st.Message = ""
	if len(p.st.Active) < v4.MaxCronActive {
		p.st.Active = append(p.st.Active, v4.CronRun{Name: name, ScheduledTime: due.UTC()})
	}
	_, cur, _, _ := v4.CronParts(p.obj)
	*cur = p.st
	err = p.c.store.CreateWithUpdate(ctx, run, p.obj)
	switch {
	case err == nil:
		p.c.runs[run.GetKind()].wrote(run.GetMeta().ResourceVersion)
		p.c.crons[p.key.Kind].wrote(p.obj.GetMeta().ResourceVersion)
		p.c.event(p.key, v4.EventNormal, "Started", fmt.Sprintf("%s %s started, scheduled for %s", run.GetKind(), name, due.UTC().Format(time.RFC3339)))
		return nil
	case errors.Is(err, store.ErrAlreadyExists):
		p.c.event(p.key, v4.EventNormal, "AlreadyStarted", fmt.Sprintf("%s %s, scheduled for %s, exists already: not started again",
			run.GetKind(), name, due.UTC().Format(time.RFC3339)))
		fresh, gerr := p.c.store.Get(ctx, p.key.Kind, p.key.Namespace, p.key.Name)
		if gerr != nil {
			return gerr
		}
		_, st, _, _ := v4.CronParts(fresh)
		if !st.LastScheduleTime.Before(due) {
			return nil
		}
		next := *st
		next.LastScheduleTime = due.UTC()
		return p.c.writeStatus(ctx, fresh, next)
	default:
		return err
	}
}

// untilNext is how long until the schedule fires after now, counted from last for an
// `@every` schedule (whose times are last plus whole periods); 0 when it never does.
func untilNext(s *cron.Schedule, last, now time.Time) time.Duration {
	var next time.Time
	if d := int64(s.Every() / time.Second); d > 0 && !last.After(now) {
		k := (now.Unix()-last.Unix())/d + 1
		next = time.Unix(last.Unix()+k*d, 0)
	} else {
		next = s.Next(maxTime(now, last))
	}
	if next.IsZero() {
		return 0
	}
	return max(next.Sub(now), time.Millisecond)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
