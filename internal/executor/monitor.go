package executor

import (
	"context"
	"sync"
	"time"

	"github.com/berthhq/berth/internal/driver"
)

// fallbackPoll is how often a pod is inspected when a driver could not wait for one of
// its tasks (Docker down when the pod started): the BCS executor's interval.
const fallbackPoll = time.Second

// taskEnd is a task that ended, as its driver's Wait delivered it.
type taskEnd struct {
	task int
	st   driver.State
}

// monitor watches a running pod until a task ends, a kill is requested, a health check
// fails or a volume passes its limit. Tasks are waited for (driver.Wait: Docker's events, pidfds), so an end is seen
// as it happens and an idle pod costs nothing; every PollInterval each task is also
// inspected, a safety net for an end a driver could not report. It returns how the pod
// ends, to be run once the health checks are stopped; when the executor closes it
// returns a no-op, since tasks outlive the agent.
func (p *pod) monitor(ctx context.Context) func(context.Context) {
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	ended := make(chan taskEnd, len(p.plan.tasks))
	interval := p.e.cfg.PollInterval
	if !p.waitTasks(wctx, &wg, ended) {
		interval = min(interval, fallbackPoll)
	}
	p.watchVolumeUsage(wctx, &wg)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	done := p.finishedTasks()
	if end := p.allMainsFinished(done); end != nil {
		return end // adopted with its main tasks completed: only sidecars run
	}
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
		case why := <-p.evict:
			if p.killRequested() {
				return p.kill
			}
			return func(ctx context.Context) { p.failEvicted(ctx, why) }
		case e := <-ended:
			if p.mainFinished(e.task, e.st, done) {
				if end := p.allMainsFinished(done); end != nil {
					return end
				}
				continue
			}
			return p.taskEnded(e.task, e.st)
		case <-ticker.C:
			i, st, ended := p.inspect(ctx, done)
			if ctx.Err() != nil {
				return func(context.Context) {}
			}
			if ended && p.mainFinished(i, st, done) {
				if end := p.allMainsFinished(done); end != nil {
					return end
				}
				continue
			}
			if ended {
				return p.taskEnded(i, st)
			}
		}
	}
}

// taskEnded is how the pod ends when task i stopped: Finish when a kill was requested
// (the stop is part of it), else Failed.
func (p *pod) taskEnded(i int, st driver.State) func(context.Context) {
	if p.killRequested() {
		return p.kill
	}
	return func(ctx context.Context) { p.failExit(ctx, i, st) }
}

// waitTasks waits for every task of the pod in goroutines that stop with ctx (wg counts
// them) and sends the first ends to ended. A task its driver no longer has is sent at
// once. It reports false when a driver could not wait for a task, which the monitor
// then covers by polling.
func (p *pod) waitTasks(ctx context.Context, wg *sync.WaitGroup, ended chan<- taskEnd) bool {
	ok := true
	for i := range p.plan.tasks {
		if !p.plan.runs(i) {
			continue // an init task, which ended before the pod ran
		}
		tp := &p.plan.tasks[i]
		ch, err := tp.drv.Wait(ctx, tp.id)
		switch {
		case isGone(err):
			ended <- taskEnd{task: i, st: driver.Gone()}
			continue
		case err != nil:
			if ctx.Err() == nil {
				p.e.observer().DriverError(tp.driverName(), "wait")
				p.e.log.Warn("cannot wait for task: polling it", "task", tp.id, "err", err)
			}
			ok = false
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case st, got := <-ch:
				if got {
					ended <- taskEnd{task: i, st: st} // buffered: one slot per task
				}
			case <-ctx.Done():
			}
		}()
	}
	return ok
}

// inspect returns the first task that no longer runs, of those not done already. A task
// the driver does not know any more has ended too (State without ID); other errors are
// transient and logged.
func (p *pod) inspect(ctx context.Context, done map[int]bool) (int, driver.State, bool) {
	for i := range p.plan.tasks {
		if !p.plan.runs(i) || done[i] {
			continue
		}
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
