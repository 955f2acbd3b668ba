package sim

import (
	"context"
	"sync"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/agent"
)

// A light node's status reports are the agent's (agent.Reporter): a change is sent at
// once, all that is pending in one request of statuses, and a task group the server does
// not have is forgotten. Its periodic reports are as the agent's too:
// every tenth carries every task group, the others only what changed since the last one
// and are not sent when nothing did. Status writes and reports take turns, as the
// agent's.

const fullReportEvery = 10

// reports are a light node's reporter and what its periodic reports remember
// (periodicSent and lastPeriodic guarded by the node's mu).
type reports struct {
	status *agent.Reporter
	turns  sync.Mutex // status writes and reports take turns, as the agent's
	// periodicSent counts periodic reports; lastPeriodic is each task group's version
	// in the last one.
	periodicSent int
	lastPeriodic map[string]uint64
}

// newReporter makes the node's status reporter, which sends over its client once it
// joined.
func (n *lightNode) newReporter() *agent.Reporter {
	put := func(ctx context.Context, ns, name string, st v4.TaskGroupStatus) error {
		n.rep.turns.Lock()
		defer n.rep.turns.Unlock()
		return n.api.AgentPutStatus(ctx, ns, name, st)
	}
	gone := func(ns, name string) {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.forgetLocked(tgKey(ns, name))
	}
	statuses := func(ctx context.Context, sts v4.AgentStatuses) (v4.AgentStatusesResult, error) {
		n.rep.turns.Lock()
		defer n.rep.turns.Unlock()
		return n.api.AgentPutStatuses(ctx, n.name, sts)
	}
	return agent.NewReporter(put, statuses, n.report, gone)
}

// report sends rep, taking its turn with the status writes.
func (n *lightNode) report(ctx context.Context, rep v4.AgentReport) (v4.AgentReportResult, error) {
	n.rep.turns.Lock()
	defer n.rep.turns.Unlock()
	return n.api.AgentReport(ctx, n.name, rep)
}

// reportLoop sends the statuses, and the periodic reports when the beat scheduler asks,
// until ctx ends.
func (n *lightNode) reportLoop(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { n.rep.status.Run(ctx, n.log) })
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.periodic:
			if err := n.periodicReport(ctx); err != nil && ctx.Err() == nil {
				n.log.Warn("periodic report failed", "err", err)
			}
		}
	}
}

// periodicReport sends the periodic report: every task group's status each
// fullReportEvery reports, else only those that changed since the last one.
func (n *lightNode) periodicReport(ctx context.Context) error {
	n.mu.Lock()
	full := n.rep.periodicSent%fullReportEvery == 0
	rep := v4.AgentReport{TaskGroups: []v4.TaskGroupReport{}}
	versions := make(map[string]uint64, len(n.tgs))
	for key, t := range n.tgs {
		if !t.started {
			continue
		}
		versions[key] = t.version
		if full || n.rep.lastPeriodic[key] != t.version {
			rep.TaskGroups = append(rep.TaskGroups, v4.TaskGroupReport{Namespace: t.ns, Name: t.name, Status: t.status})
		}
	}
	n.mu.Unlock()
	if !full && len(rep.TaskGroups) == 0 {
		n.mu.Lock()
		n.rep.periodicSent++
		n.mu.Unlock()
		return nil
	}
	res, err := n.report(ctx, rep)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.rep.periodicSent++
	n.rep.lastPeriodic = versions
	for _, u := range res.Unknown {
		n.forgetLocked(tgKey(u.Namespace, u.Name))
	}
	return nil
}
