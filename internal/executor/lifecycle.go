package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// run is the pod's goroutine: start (unless adopted), then monitor until the pod ends or
// ctx (the executor's) ends. startCtx also bounds the start. adopted holds the tasks'
// states when Adopt took the pod over.
func (p *pod) run(ctx, startCtx context.Context, adopted []driver.State) {
	defer close(p.done)
	if adopted == nil {
		p.update(func(*v4.TaskGroupStatus) {}) // Staging, as newPod set it
		if !p.launch(ctx, startCtx) {
			return
		}
	} else if i, st, ok := p.plan.firstEnded(adopted); ok {
		p.failExit(ctx, i, st)
		return
	} else {
		p.update(func(*v4.TaskGroupStatus) {}) // Running, as Adopt set it
	}
	hc := p.startHealth(ctx)
	end := p.monitor(ctx)
	hc.stop()
	end(ctx)
}

// launch prepares and starts the tasks in order. It reports whether every task runs;
// otherwise the pod has ended (Failed, or Finish after a kill).
func (p *pod) launch(ctx, startCtx context.Context) (ok bool) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The start is a span of the caller's trace (the agent's start of the task group),
	// whose tasks' starts are its children; it ends once every task runs, or the start failed.
	sctx, span := tracer.Start(trace.ContextWithSpan(sctx, trace.SpanFromContext(startCtx)), "executor.Launch",
		trace.WithAttributes(attribute.String("berth.namespace", p.ns), attribute.String("berth.name", p.name)))
	defer func() {
		if !ok {
			span.SetStatus(codes.Error, p.snapshot().Message)
		}
		span.End()
	}()
	defer context.AfterFunc(startCtx, cancel)()
	p.mu.Lock()
	p.cancelStart = cancel
	if p.killing {
		cancel()
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.cancelStart = nil
		p.mu.Unlock()
	}()

	if p.plan.err != nil {
		p.failStart(ctx, p.plan.err)
		return false
	}
	if err := p.checkPorts(); err != nil {
		p.failStart(ctx, err)
		return false
	}
	prep, err := p.prepare(sctx)
	if err == nil && p.plan.step != nil {
		err = p.stageInputs(sctx, prep.tasks[p.plan.main])
	}
	if err == nil {
		p.update(func(st *v4.TaskGroupStatus) {
			for i := range st.Tasks {
				st.Tasks[i].Status = v4.StatusStarting
			}
		})
		err = p.startTasks(sctx, prep)
	}
	switch {
	case p.killRequested():
		p.kill(ctx)
		return false
	case err != nil:
		p.failStart(ctx, err)
		return false
	}
	p.update(func(st *v4.TaskGroupStatus) {
		now := time.Now()
		for i := range st.Tasks {
			if !p.plan.runs(i) {
				continue // an init task, which ended
			}
			st.Tasks[i].Status = v4.StatusRunning
			st.Tasks[i].Message = ""
		}
		st.StartedAt = now
		st.Message = ""
	})
	return true
}

// startTasks starts the tasks in the pod's order (docs/pods.md, "Start and stop") and
// stops at the first error or when ctx ends: a sidecar runs its postStart hook and passes
// its check, an init task runs to success, a main task runs its postStart hook.
func (p *pod) startTasks(ctx context.Context, prep *prepared) error {
	join, err := p.podNetwork(ctx)
	if err != nil {
		return err
	}
	for _, i := range p.plan.order {
		if p.plan.net != nil {
			p.joinNetwork(i, prep, join)
		}
		if err := p.startRole(ctx, i, prep.tasks[i]); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start interrupted: %w", context.Cause(ctx))
	}
	return nil
}

// startRole starts task i as its role asks.
func (p *pod) startRole(ctx context.Context, i int, t *driver.Task) error {
	tp := &p.plan.tasks[i]
	if tp.role() == v4.RoleInit {
		return p.runInit(ctx, i, t)
	}
	if p.plan.runToEnd && tp.role() == "" {
		t.RunToEnd = true // a job's main task: its end is its result
	}
	if err := p.startTask(ctx, i, t); err != nil {
		return err
	}
	if h := tp.lifecycle; h != nil && h.PostStart != nil {
		if err := p.runHook(ctx, i, hookPostStart, h.PostStart, p.hookTimeout(h.PostStart)); err != nil {
			return err
		}
	}
	if tp.role() == v4.RoleSidecar {
		return p.sidecarReady(ctx, i)
	}
	return nil
}

// startTask starts task i and records its info; an error says which task failed, with the
// driver's info of how the failed start ended when it has some.
func (p *pod) startTask(ctx context.Context, i int, t *driver.Task) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start interrupted before task %s: %w", t.Name, context.Cause(ctx))
	}
	tp := &p.plan.tasks[i]
	started := time.Now()
	ctx, span := tracer.Start(ctx, "driver.Start", trace.WithAttributes(
		attribute.String("berth.task", t.Name), attribute.String("berth.driver", tp.driverName())))
	st, err := tp.drv.Start(ctx, t)
	p.e.observer().TaskStarted(tp.driverName(), time.Since(started), err)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	if err != nil {
		if msg, ok := driver.PullMessage(err); ok {
			// The registry's answer, which the pod's message repeats (no credentials in it).
			p.event(v4.EventWarning, "PullFailed", fmt.Sprintf("task %s: %s", t.Name, msg))
		}
		if st.ID != "" {
			// The driver says how the failed start ended (exit code, message).
			info := p.decorate(i, st.Info)
			p.update(func(s *v4.TaskGroupStatus) { s.Tasks[i].Info = info })
		}
		return fmt.Errorf("start task %s: %w", t.Name, err)
	}
	p.setStarted(i)
	if i == p.plan.owner {
		// The first container owns the network: its IP is the pod's.
		p.setPodIP(p.ownerIP(st.Info.IPAddress))
	}
	info := p.decorate(i, st.Info)
	p.update(func(s *v4.TaskGroupStatus) { s.Tasks[i].Info = info })
	return nil
}

// decorate adds what the executor knows to a driver's container info: the node address,
// for processes (host network) the host IP and node name, and for containers that share
// a network the pod's IP when the driver does not say it.
func (p *pod) decorate(i int, info v4.ContainerInfo) v4.ContainerInfo {
	cfg := &p.e.cfg
	info.NodeAddress = cfg.HostIP
	if p.plan.tasks[i].process != nil {
		info.IPAddress = cfg.HostIP
		info.Hostname = cfg.NodeName
		if info.NetworkMode == "" {
			info.NetworkMode = "host"
		}
	} else if info.IPAddress == "" {
		if ip := p.getPodIP(); ip != "" {
			info.IPAddress = ip
		} else if p.plan.hostNetwork {
			info.IPAddress = cfg.HostIP
		}
	}
	if info.Name == "" {
		info.Name = p.plan.tasks[i].id
	}
	return info
}

// firstEnded finds the first task of an adoption that no longer runs, of those that
// keep running (an init task ended long before; a main task of a pod with roles that
// exited 0 is done, not ended).
func (p *podPlan) firstEnded(states []driver.State) (int, driver.State, bool) {
	for i, st := range states {
		if p.runs(i) && !st.Running && !p.cleanMainEnd(i, st) {
			return i, st, true
		}
	}
	return 0, driver.State{}, false
}

// isGone reports an error for a task the driver no longer has.
func isGone(err error) bool { return errors.Is(err, driver.ErrNotFound) }
