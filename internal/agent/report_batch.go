package agent

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// statusBatches sends a node's pending statuses in one request (the reporter's
// sendMany): the statuses route, which answers each status; or, on a server without it
// (an older one), a report, for two statuses or more (one goes alone, as a status write).
type statusBatches struct {
	statuses func(context.Context, v4.AgentStatuses) (v4.AgentStatusesResult, error)
	report   func(context.Context, v4.AgentReport) (v4.AgentReportResult, error)
	// oldUntil is when to try the statuses route again (Unix nanoseconds) after a server
	// answered that it has none: a cluster being upgraded gets it later.
	oldUntil atomic.Int64
}

// statusRouteRetry is how long an agent takes the server for one without the statuses
// route once it said so.
const statusRouteRetry = 5 * time.Minute

// errNoBatch says a status goes alone (a server without the statuses route).
var errNoBatch = errors.New("one status goes alone")

// send sends ps and returns the answer to each.
func (b *statusBatches) send(ctx context.Context, ps []pendingStatus) ([]v4.AgentStatusAnswer, error) {
	if time.Now().UnixNano() >= b.oldUntil.Load() {
		req := v4.AgentStatuses{TaskGroups: make([]v4.TaskGroupReport, 0, len(ps))}
		for _, p := range ps {
			req.TaskGroups = append(req.TaskGroups, v4.TaskGroupReport{Namespace: p.ns, Name: p.name, Status: p.status})
		}
		res, err := b.statuses(ctx, req)
		if err == nil {
			return res.Results, nil
		}
		if code := client.StatusOf(err); code != http.StatusNotFound && code != http.StatusMethodNotAllowed {
			return nil, err
		}
		b.oldUntil.Store(time.Now().Add(statusRouteRetry).UnixNano())
	}
	if len(ps) < 2 || b.report == nil {
		return nil, errNoBatch
	}
	unknown, err := reportPending(ctx, ps, b.report)
	if err != nil {
		return nil, err
	}
	gone := make(map[string]bool, len(unknown))
	for _, key := range unknown {
		gone[key] = true
	}
	answers := make([]v4.AgentStatusAnswer, len(ps))
	for i, p := range ps {
		answers[i].Code = http.StatusOK
		if gone[tgKey(p.ns, p.name)] {
			answers[i].Code = http.StatusNotFound
		}
	}
	return answers, nil
}
