package agent

import (
	"context"
	"log/slog"

	v4 "github.com/berthhq/berth/api/v4"
)

// Reporter sends a node's task group statuses as the agent's own reporter does: at once,
// only the latest of each task group, several in one report, retried with backoff while
// the server is unreachable, and never blocking the caller. The simulator's light nodes
// report with it, so that their reports cost the server what an agent's do.
type Reporter struct{ r *reporter }

// NewReporter returns a Reporter that sends one status with put and several with report,
// and calls gone for a task group the server does not have (it is forgotten then).
func NewReporter(put func(ctx context.Context, ns, name string, st v4.TaskGroupStatus) error,
	report func(context.Context, v4.AgentReport) (v4.AgentReportResult, error), gone func(ns, name string)) *Reporter {
	r := newReporter(put, gone)
	r.sendMany = func(ctx context.Context, ps []pendingStatus) ([]string, error) { return reportPending(ctx, ps, report) }
	return &Reporter{r}
}

// Enqueue records st as the status to send for ns/name.
func (r *Reporter) Enqueue(ns, name string, st v4.TaskGroupStatus) { r.r.enqueue(ns, name, st) }

// Forget drops what is pending for ns/name.
func (r *Reporter) Forget(ns, name string) { r.r.forget(tgKey(ns, name)) }

// Run sends the statuses until ctx ends.
func (r *Reporter) Run(ctx context.Context, log *slog.Logger) { r.r.run(ctx, log) }
