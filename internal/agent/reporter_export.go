package agent

import (
	"context"
	"log/slog"

	v4 "github.com/berthhq/berth/api/v4"
)

// Reporter sends a node's task group statuses as the agent's own reporter does: at once,
// only the latest of each task group, all that is pending in one request, retried with backoff while
// the server is unreachable, and never blocking the caller. The simulator's light nodes
// report with it, so that their reports cost the server what an agent's do.
type Reporter struct{ r *reporter }

// NewReporter returns a Reporter that sends what is pending with statuses (several in
// one request), or on a server without that route several with report and one with put,
// and calls gone for a task group the server does not have (it is forgotten then).
func NewReporter(put func(ctx context.Context, ns, name string, st v4.TaskGroupStatus) error,
	statuses func(context.Context, v4.AgentStatuses) (v4.AgentStatusesResult, error),
	report func(context.Context, v4.AgentReport) (v4.AgentReportResult, error), gone func(ns, name string)) *Reporter {
	r := newReporter(put, gone)
	r.sendMany = (&statusBatches{statuses: statuses, report: report}).send
	return &Reporter{r}
}

// Enqueue records st as the status to send for ns/name.
func (r *Reporter) Enqueue(ns, name string, st v4.TaskGroupStatus) { r.r.enqueue(ns, name, st) }

// Forget drops what is pending for ns/name.
func (r *Reporter) Forget(ns, name string) { r.r.forget(tgKey(ns, name)) }

// Run sends the statuses until ctx ends.
func (r *Reporter) Run(ctx context.Context, log *slog.Logger) { r.r.run(ctx, log) }
