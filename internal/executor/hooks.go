package executor

import (
	"context"
	"fmt"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/executor/health"
)

// The hooks a task may have (docs/pods.md, "Hooks").
const (
	hookPostStart = "postStart"
	hookPreStop   = "preStop"
)

// hookReasons are the reasons of the events of failed hooks.
var hookReasons = map[string]string{hookPostStart: "PostStartHookFailed", hookPreStop: "PreStopHookFailed"}

// hookCheck is the probe a hook is: an exec hook runs as a COMMAND check does (the
// shell in the task's context), an HTTP GET as an HTTP check does (200-399 succeeds),
// against the task's address and its own port.
func hookCheck(h *v4.Hook) v4.HealthCheck {
	if h.Exec != nil {
		return v4.HealthCheck{Type: v4.CheckCommand, Command: &v4.CommandCheck{Value: h.Exec.Command}}
	}
	return v4.HealthCheck{Type: v4.CheckHTTP, HTTP: h.HTTPGet}
}

// hookTimeout is how long hook h may take: its timeoutSeconds, or the default.
func (p *pod) hookTimeout(h *v4.Hook) time.Duration {
	secs := h.TimeoutSeconds
	if secs <= 0 {
		secs = v4.DefaultHookTimeout
	}
	return time.Duration(secs) * p.e.cfg.HealthTimeUnit
}

// runHook runs hook h (which: hookPostStart or hookPreStop) of task i within limit. A
// failure is returned and recorded as a Warning event of the task group.
func (p *pod) runHook(ctx context.Context, i int, which string, h *v4.Hook, limit time.Duration) error {
	tp := &p.plan.tasks[i]
	began := time.Now()
	probe, err := health.NewProbe(hookCheck(h), p.target(i, p.snapshot().Tasks[i].Info))
	if err == nil {
		hctx, cancel := context.WithTimeout(ctx, limit)
		err = probe(hctx)
		if err != nil && hctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("timed out after %s: %w", limit.Round(time.Millisecond), err)
		}
		cancel()
	}
	if err != nil {
		err = fmt.Errorf("%s hook of task %s: %w", which, tp.name, err)
		p.e.log.Warn("hook failed", "namespace", p.ns, "name", p.name, "task", tp.name, "hook", which, "err", err)
		p.event(v4.EventWarning, hookReasons[which], err.Error())
		return err
	}
	p.e.log.Debug("hook ran", "namespace", p.ns, "name", p.name, "task", tp.name, "hook", which, "took", time.Since(began))
	return nil
}

// preStop runs task i's preStop hook, if it has one, before a deliberate stop; it may
// take until deadline (the kill grace period's end). A failure is an event, and the stop
// goes on. It reports whether a hook ran.
func (p *pod) preStop(ctx context.Context, i int, deadline time.Time) bool {
	lc := p.plan.tasks[i].lifecycle
	if lc == nil || lc.PreStop == nil {
		return false
	}
	limit := min(p.hookTimeout(lc.PreStop), time.Until(deadline))
	if limit <= 0 {
		return false
	}
	_ = p.runHook(ctx, i, hookPreStop, lc.PreStop, limit) // logged and recorded as an event
	return true
}

// event records an event of the pod's task group, when the executor has a recorder.
func (p *pod) event(typ, reason, message string) {
	if f := p.e.cfg.Event; f != nil {
		f(p.ns, p.name, typ, reason, message)
	}
}
