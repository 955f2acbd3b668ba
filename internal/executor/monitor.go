package executor

import (
	"context"
	"time"

	"github.com/berthhq/berth/internal/driver"
)

// monitor watches a running pod: every poll interval it inspects each task (BCS
// containerCheck), and it waits for a kill or a health failure. It returns how the pod
// ends, to be run once the health checks are stopped; when the executor closes it returns
// a no-op, since tasks outlive the agent.
func (p *pod) monitor(ctx context.Context) func(context.Context) {
	ticker := time.NewTicker(p.e.cfg.PollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return func(context.Context) {}
		case <-p.killCh:
			return p.kill
		case hf := <-p.healthKill:
			if p.killRequested() {
				return p.kill
			}
			return func(ctx context.Context) { p.failHealth(ctx, hf) }
		case <-ticker.C:
			i, st, ended := p.inspect(ctx)
			if ctx.Err() != nil {
				return func(context.Context) {}
			}
			if !ended {
				continue
			}
			// A task that stops during a deliberate kill is part of the kill: Finish.
			if p.killRequested() {
				return p.kill
			}
			return func(ctx context.Context) { p.failExit(ctx, i, st) }
		}
	}
}

// inspect returns the first task that no longer runs. A task the driver does not know any
// more has ended too (State without ID); other errors are transient and logged.
func (p *pod) inspect(ctx context.Context) (int, driver.State, bool) {
	for i := range p.plan.tasks {
		tp := &p.plan.tasks[i]
		st, err := tp.drv.Inspect(ctx, tp.id)
		switch {
		case isGone(err):
			return i, driver.State{}, true
		case err != nil:
			if ctx.Err() == nil {
				p.e.log.Warn("inspect task", "task", tp.id, "err", err)
			}
			continue
		case !st.Running:
			return i, st, true
		}
	}
	return 0, driver.State{}, false
}
