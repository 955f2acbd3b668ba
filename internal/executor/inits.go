package executor

import (
	"cmp"
	"context"
	"fmt"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/executor/health"
)

// runInit runs init task i to its end (docs/pods.md, "Init tasks"): it is started, then
// waited for (driver.Wait: no polling). A clean exit marks it Finish, with its info, and
// the start goes on; any other end fails the start with the reason, and the restart
// policy decides, as for any failed start. The task stays in its driver, so its exit and
// logs can be read until the pod is removed.
func (p *pod) runInit(ctx context.Context, i int, t *driver.Task) error {
	t.RunToEnd = true
	if err := p.startTask(ctx, i, t); err != nil {
		return err
	}
	tp := &p.plan.tasks[i]
	p.update(func(s *v4.TaskGroupStatus) { s.Tasks[i].Status = v4.StatusRunning })
	st, err := p.waitEnd(ctx, tp)
	if err != nil {
		return fmt.Errorf("init task %s: %w", tp.name, err)
	}
	info := p.decorate(i, st.Info)
	if st.ID == "" || st.Info.OOMKilled || st.Info.ExitCode != 0 {
		p.update(func(s *v4.TaskGroupStatus) { s.Tasks[i].Info = info })
		return fmt.Errorf("init task %s %s", tp.name, exitReason(st))
	}
	p.update(func(s *v4.TaskGroupStatus) {
		s.Tasks[i].Status = v4.StatusFinish
		s.Tasks[i].Info = info
		s.Tasks[i].Message = "completed"
	})
	return nil
}

// waitEnd waits for task tp to end, or for ctx (a kill, the start's bound).
func (p *pod) waitEnd(ctx context.Context, tp *taskPlan) (driver.State, error) {
	ch, err := tp.drv.Wait(ctx, tp.id)
	switch {
	case isGone(err):
		return driver.Gone(), nil
	case err != nil:
		return driver.State{}, fmt.Errorf("wait: %w", err)
	}
	select {
	case st, ok := <-ch:
		if ok {
			return st, nil
		}
	case <-ctx.Done():
	}
	if ctx.Err() == nil {
		return driver.State{}, fmt.Errorf("wait ended without the task's end")
	}
	return driver.State{}, fmt.Errorf("start interrupted while it runs: %w", context.Cause(ctx))
}

// sidecarReady waits until sidecar i passes a local check, when it has one (its readiness
// check, else its startup check, else its liveness check), before the
// tasks after it start. The wait ends in failure when the check asks for a kill, or when
// it has not passed within its grace period and as many intervals as its failure limit
// allows (at least 3) and one more: a sidecar that never answers must not hold the pod
// in Starting for ever.
func (p *pod) sidecarReady(ctx context.Context, i int) error {
	tp := &p.plan.tasks[i]
	check := cmp.Or(tp.readiness, tp.startup, tp.check)
	if check == nil {
		return nil
	}
	probe, err := health.NewProbe(*check, p.target(i, p.snapshot().Tasks[i].Info))
	if err != nil {
		return nil // the task's check reports why it cannot run once the pod runs
	}
	policy := health.PolicyOf(*check, p.e.cfg.HealthTimeUnit)
	bound := policy.Grace + time.Duration(max(policy.ConsecutiveFailures, 3)+1)*policy.Interval
	rctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	var last health.Result
	health.Run(rctx, policy, probe, func(r health.Result) {
		last = r
		if check == tp.readiness {
			p.update(func(st *v4.TaskGroupStatus) {
				st.Tasks[i].Ready, st.Tasks[i].ReadyMessage = new(r.Healthy), r.Message
			})
		} else {
			p.recordHealth(i, r)
		}
		if r.Healthy || r.Kill {
			cancel()
		}
	})
	switch {
	case last.Healthy:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("start interrupted while sidecar %s gets ready: %w", tp.name, context.Cause(ctx))
	case last.Message != "":
		return fmt.Errorf("sidecar %s is not ready: %s", tp.name, last.Message)
	}
	return fmt.Errorf("sidecar %s is not ready: its check did not pass within %s", tp.name, bound)
}
