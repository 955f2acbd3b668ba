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
	} else if i, st, ok := firstEnded(adopted); ok {
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
			st.Tasks[i].Status = v4.StatusRunning
			st.Tasks[i].Message = ""
		}
		st.StartedAt = now
		st.Message = ""
	})
	return true
}

// startTasks starts the tasks in order and stops at the first error or when ctx ends.
func (p *pod) startTasks(ctx context.Context, prep *prepared) error {
	if p.plan.net != nil {
		return p.startContainers(ctx, prep)
	}
	for i := range prep.tasks {
		if err := p.startTask(ctx, i, prep.tasks[i]); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start interrupted: %w", context.Cause(ctx))
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
		if st.ID != "" {
			// The driver says how the failed start ended (exit code, message).
			info := p.decorate(i, st.Info)
			p.update(func(s *v4.TaskGroupStatus) { s.Tasks[i].Info = info })
		}
		return fmt.Errorf("start task %s: %w", t.Name, err)
	}
	p.setStarted(i)
	if i == 0 && p.plan.net != nil && !p.plan.net.cni {
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

// firstEnded finds the first task of an adoption that no longer runs.
func firstEnded(states []driver.State) (int, driver.State, bool) {
	for i, st := range states {
		if !st.Running {
			return i, st, true
		}
	}
	return 0, driver.State{}, false
}

// isGone reports an error for a task the driver no longer has.
func isGone(err error) bool { return errors.Is(err, driver.ErrNotFound) }
