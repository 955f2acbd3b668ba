// Package health runs a task's local health check (HTTP, TCP or COMMAND) on a schedule
// with BCS's semantics (the defaults are in docs/spec.md): a probe every interval,
// each bounded by the timeout; failures during the grace period are not counted until the
// first success; consecutive failures are counted and, once they reach the limit, the
// check asks for the task to be killed. The executor decides what a result means for the
// pod; this package only probes and counts.
package health

import (
	"context"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// Probe checks once: nil is healthy, an error says why not. It must return when ctx ends.
type Probe func(ctx context.Context) error

// Policy is the timing and kill threshold of one check.
type Policy struct {
	Interval time.Duration
	Timeout  time.Duration
	// Grace is how long after the start failures are ignored (until the first success).
	Grace time.Duration
	// ConsecutiveFailures > 0: that many failures in a row ask for a kill; 0 never does.
	ConsecutiveFailures int
}

// PolicyOf converts a check's whole seconds into durations of unit (1 s in production;
// tests scale it down). Values left at 0 get BCS's defaults for interval and timeout; the
// timeout is kept below the interval, as validation requires.
func PolicyOf(c v4.HealthCheck, unit time.Duration) Policy {
	interval := c.IntervalSeconds
	if interval <= 0 {
		interval = v4.DefaultCheckInterval
	}
	timeout := c.TimeoutSeconds
	if timeout <= 0 || timeout >= interval {
		timeout = min(v4.DefaultCheckTimeout, max(1, interval-1))
	}
	return Policy{
		Interval:            time.Duration(interval) * unit,
		Timeout:             time.Duration(timeout) * unit,
		Grace:               time.Duration(max(0, c.GracePeriodSeconds)) * unit,
		ConsecutiveFailures: max(0, c.ConsecutiveFailures),
	}
}

// Local returns the first local check (HTTP, TCP or COMMAND) of checks of role (the
// check's ProbeRole: a check without a role is a liveness check), or nil: BCS uses only
// the first; the REMOTE_* checks run on the server.
func Local(checks []v4.HealthCheck, role string) *v4.HealthCheck {
	for i := range checks {
		switch checks[i].Type {
		case v4.CheckHTTP, v4.CheckTCP, v4.CheckCommand:
			if checks[i].ProbeRole() == role {
				return &checks[i]
			}
		}
	}
	return nil
}

// HasRoles reports whether a check of checks has a role of its own.
func HasRoles(checks []v4.HealthCheck) bool {
	for _, c := range checks {
		if c.Role != "" {
			return true
		}
	}
	return false
}

// Result is a check's state after a probe.
type Result struct {
	// Checked is false while failures are still ignored (grace period, no success yet).
	Checked             bool
	Healthy             bool
	ConsecutiveFailures int
	// Message is the last failure (empty when healthy).
	Message string
	// Kill is set when ConsecutiveFailures reached the policy's limit.
	Kill bool
}

// Run probes at once and then every interval until ctx ends or a result asks for a kill
// (a probe may take up to the timeout, even past the interval: the next starts when it
// ended, as Mesos ran checks),
// and calls report with every result that differs from the previous one (a flip, a new
// failure count or message), from this goroutine.
func Run(ctx context.Context, p Policy, probe Probe, report func(Result)) {
	if p.Interval <= 0 {
		p.Interval = time.Second
	}
	if p.Timeout <= 0 {
		p.Timeout = p.Interval
	}
	start := time.Now()
	counting := p.Grace <= 0
	var last Result
	ticker := time.NewTicker(p.Interval)
	defer ticker.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, p.Timeout)
		err := probe(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		// Grace ends with the first success or when its time is up, whichever comes first.
		if !counting && (err == nil || time.Since(start) >= p.Grace) {
			counting = true
		}
		if counting {
			next := step(last, err, p.ConsecutiveFailures)
			if next != last {
				last = next
				report(next)
			}
			if next.Kill {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func step(prev Result, err error, limit int) Result {
	next := Result{Checked: true}
	if err == nil {
		next.Healthy = true
		return next
	}
	next.ConsecutiveFailures = prev.ConsecutiveFailures + 1
	next.Message = err.Error()
	next.Kill = limit > 0 && next.ConsecutiveFailures >= limit
	return next
}
