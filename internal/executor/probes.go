package executor

import (
	"context"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/executor/health"
)

// runStartup runs task i's startup check until it passes, which it reports (true), or
// until it asks for a kill, which goes to the pod's goroutine as a liveness failure does,
// or ctx ends. Its results are the task's health meanwhile.
func (p *pod) runStartup(ctx context.Context, i int, target health.Target) bool {
	tp := &p.plan.tasks[i]
	probe, ok := p.newProbe(i, tp.startup, target)
	if !ok {
		return true // unchecked: liveness and readiness need not wait for it
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	passed := false
	health.Run(sctx, health.PolicyOf(*tp.startup, p.e.cfg.HealthTimeUnit), probe, func(r health.Result) {
		p.e.observer().HealthChecked(tp.startup.Type, r)
		if !r.Healthy {
			r.Message = "startup: " + r.Message
		}
		p.onHealth(i, r)
		if r.Healthy {
			passed = true
			cancel()
		}
	})
	return passed && ctx.Err() == nil
}

// runReadiness runs task i's readiness check: its results make the task ready or not,
// never kill it. Like Kubernetes' failureThreshold, the check's consecutiveFailures (at
// least 1) failures in a row take a ready task out; one success makes it ready.
func (p *pod) runReadiness(ctx context.Context, i int, probe health.Probe) {
	check := p.plan.tasks[i].readiness
	policy := health.PolicyOf(*check, p.e.cfg.HealthTimeUnit)
	threshold := max(1, policy.ConsecutiveFailures)
	policy.ConsecutiveFailures = 0 // never a kill
	health.Run(ctx, policy, probe, func(r health.Result) {
		p.e.observer().HealthChecked(check.Type, r)
		p.update(func(st *v4.TaskGroupStatus) {
			t := &st.Tasks[i]
			switch {
			case r.Healthy:
				t.Ready, t.ReadyMessage = new(true), ""
			case r.ConsecutiveFailures >= threshold:
				t.Ready, t.ReadyMessage = new(false), r.Message
			default:
				t.ReadyMessage = r.Message // not yet enough failures to change it
			}
		})
	})
}

// deriveReady sets, in a pod whose checks have roles, each running task's readiness that
// no readiness check gives (its health when it has a check, else true once it runs) and
// the pod's: every task ready.
func (p *pod) deriveReady(st *v4.TaskGroupStatus) {
	all := true
	for i := range st.Tasks {
		if !p.plan.runs(i) {
			continue
		}
		t, tp := &st.Tasks[i], &p.plan.tasks[i]
		if tp.readiness == nil {
			switch {
			case tp.check != nil || tp.startup != nil:
				t.Ready, t.ReadyMessage = nil, ""
				if t.Healthy != nil {
					t.Ready = new(*t.Healthy)
					if !*t.Healthy {
						t.ReadyMessage = t.HealthMessage
					}
				}
			case t.Status == v4.StatusRunning:
				t.Ready = new(true)
			default:
				t.Ready = nil
			}
		}
		if t.Ready == nil || !*t.Ready {
			all = false
		}
	}
	st.Ready = new(all)
}
