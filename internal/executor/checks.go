package executor

import (
	"context"
	"sync"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/executor/health"
)

// healthFailure asks the pod's goroutine to kill the pod: task's check failed failures
// times in a row, the last time with message.
type healthFailure struct {
	task     int
	failures int
	message  string
}

// checks are the health check goroutines of a running pod.
type checks struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// stop ends the checks and waits for them, so no health result follows.
func (c *checks) stop() {
	c.cancel()
	c.wg.Wait()
}

// startHealth starts the local checks of every task that runs (docs/pods.md, "Probes"):
// a task's startup check first, when it has one, then its liveness and readiness checks
// once that passed.
func (p *pod) startHealth(ctx context.Context) *checks {
	hctx, cancel := context.WithCancel(ctx)
	c := &checks{cancel: cancel}
	status := p.snapshot()
	for i := range p.plan.tasks {
		tp := &p.plan.tasks[i]
		if !p.plan.runs(i) {
			continue
		}
		target := p.target(i, status.Tasks[i].Info)
		if tp.startup == nil {
			p.startProbes(hctx, c, i, target)
			continue
		}
		c.wg.Go(func() {
			if p.runStartup(hctx, i, target) {
				p.startProbes(hctx, c, i, target)
			}
		})
	}
	return c
}

// startProbes starts task i's liveness and readiness checks, those it has.
func (p *pod) startProbes(ctx context.Context, c *checks, i int, target health.Target) {
	tp := &p.plan.tasks[i]
	if tp.check != nil {
		if probe, ok := p.newProbe(i, tp.check, target); ok {
			policy := health.PolicyOf(*tp.check, p.e.cfg.HealthTimeUnit)
			c.wg.Go(func() {
				health.Run(ctx, policy, probe, func(r health.Result) {
					p.e.observer().HealthChecked(tp.check.Type, r)
					p.onHealth(i, r)
				})
			})
		}
	}
	if tp.readiness != nil {
		if probe, ok := p.newProbe(i, tp.readiness, target); ok {
			c.wg.Go(func() { p.runReadiness(ctx, i, probe) })
		}
	}
}

// newProbe builds check's probe of task i; a check that cannot run (validation should
// have refused it) says so on the task, once, and the task runs unchecked.
func (p *pod) newProbe(i int, check *v4.HealthCheck, target health.Target) (health.Probe, bool) {
	probe, err := health.NewProbe(*check, target)
	if err != nil {
		msg := err.Error()
		p.update(func(st *v4.TaskGroupStatus) { st.Tasks[i].HealthMessage = msg })
		return nil, false
	}
	return probe, true
}

// target is where task i's check probes: 127.0.0.1 and host ports for processes and
// host-network containers, the container's IP and container ports otherwise.
func (p *pod) target(i int, info v4.ContainerInfo) health.Target {
	tp := &p.plan.tasks[i]
	t := health.Target{Host: "127.0.0.1", Ports: map[string]int{}, Exec: func(ctx context.Context, cmd string) (driver.ExecResult, error) {
		return tp.drv.Exec(ctx, tp.id, cmd)
	}}
	if p.plan.hostNetwork || info.IPAddress == "" {
		for _, ap := range tp.ports {
			t.Ports[ap.Name] = ap.HostPort
		}
		return t
	}
	t.Host = info.IPAddress
	for _, sp := range tp.specPorts() {
		t.Ports[sp.Name] = sp.ContainerPort
	}
	return t
}

// onHealth records a check result on the task and reports it at once; a result that asks
// for a kill is handed to the pod's goroutine.
func (p *pod) onHealth(i int, r health.Result) {
	p.recordHealth(i, r)
	if r.Kill {
		select {
		case p.healthKill <- healthFailure{task: i, failures: r.ConsecutiveFailures, message: r.Message}:
		default: // another task's failure already asked
		}
	}
}

// recordHealth records a check result on task i and reports it.
func (p *pod) recordHealth(i int, r health.Result) {
	p.update(func(st *v4.TaskGroupStatus) {
		t := &st.Tasks[i]
		t.Healthy = new(r.Healthy)
		t.ConsecutiveFailures = r.ConsecutiveFailures
		t.HealthMessage = r.Message
		t.Info.Healthy = r.Healthy
		t.Info.IsChecked = r.Checked
		t.Info.ConsecutiveFailureTimes = r.ConsecutiveFailures
	})
}
