package controller

import (
	"fmt"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// DefaultStartGrace is how long a new instance has to become ready before a service that
// selects it, and has no ready instance, warns NoEndpoints; an instance whose health
// checks or startGracePeriod give it longer has that (docs/services.md, "Endpoints").
const DefaultStartGrace = time.Minute

// noEndpoints is the NoEndpoints verdict on one service at one moment.
type noEndpoints struct {
	warn bool          // the warning is due now
	wait time.Duration // when it is not yet due: look again after this long (0: never)
	msg  string        // the warning's message
}

// graceTiming is what an instance's start grace is made of: the default (Options.
// StartGrace) and the length of one second of a health check's settings.
type graceTiming struct {
	start time.Duration
	unit  time.Duration
}

// startGrace is how long tg has to become ready, counted from its creation: the
// default, or its health checks' delay and grace period, or its processes'
// startGracePeriod, whichever is longest. A replacement (a restart, a move) or an
// instance asked to stop has none: the workload had its chance, and the service is
// empty now.
func (g graceTiming) startGrace(tg *v4.TaskGroup) time.Duration {
	if tg.Spec.ReschedTimes > 0 || tg.Spec.Desired == v4.DesiredStopped {
		return 0
	}
	grace := g.start
	for _, h := range tg.Spec.Template.Spec.HealthChecks() {
		grace = max(grace, time.Duration(h.DelaySeconds+h.GracePeriodSeconds)*g.unit)
	}
	for _, p := range tg.Spec.Template.Spec.Processes {
		grace = max(grace, time.Duration(p.StartGracePeriod)*time.Second)
	}
	return grace
}

// judgeEmpty decides whether svc, whose endpoints are ep, warns NoEndpoints at now: only
// when no instance is ready, and only once the instances it selects had their start
// grace, so a workload and its service applied together warn nothing while the
// instances start. A service that selects nothing waits the default grace from its own
// creation (its workload may be placed a moment later). tgs are the task groups its
// selector matches.
func judgeEmpty(svc *v4.Service, ep *v4.Endpoints, tgs []*v4.TaskGroup, g graceTiming, now time.Time) noEndpoints {
	if len(ep.Endpoints) > 0 {
		return noEndpoints{}
	}
	sel := labelSelector(svc.Spec.Selector)
	v := noEndpoints{msg: fmt.Sprintf("the selector %s matches no instance in namespace %s", sel, svc.Metadata.Namespace)}
	due := svc.Metadata.CreationTimestamp.Add(g.start)
	if len(ep.NotReady) > 0 {
		nr := ep.NotReady[0]
		v.msg = fmt.Sprintf("none of the %d instances the selector %s matches is ready (instance %d of %s %s: %s)",
			len(ep.NotReady), sel, nr.Target.Index, nr.Target.Kind, nr.Target.Name, nr.Reason)
		if len(ep.NotReady) == 1 {
			v.msg = fmt.Sprintf("the one instance the selector %s matches is not ready (instance %d of %s %s: %s)",
				sel, nr.Target.Index, nr.Target.Kind, nr.Target.Name, nr.Reason)
		}
		// The first instance whose grace ended unready makes the warning due.
		due = time.Time{}
		for _, tg := range tgs {
			if !v4.Selects(svc.Spec.Selector, tg.Spec.Labels) || v4.Terminal(tg.Status.Phase) {
				continue // not in the endpoints (endpointsFor)
			}
			if d := tg.Metadata.CreationTimestamp.Add(g.startGrace(tg)); due.IsZero() || d.Before(due) {
				due = d
			}
		}
	}
	if wait := due.Sub(now); wait > 0 {
		v.wait = wait
		return v
	}
	v.warn = true
	return v
}
