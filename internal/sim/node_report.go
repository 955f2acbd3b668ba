package sim

import (
	"context"
	"net/http"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/ctxtime"
)

// A light node's status reports, as the agent's reporter sends them: a change is sent
// at once, several pending ones in one report (at most maxStatusBatch), one alone as a
// status write; a task group the server does not have is forgotten. Every tenth periodic
// report carries every task group, the others only what changed since the last one and
// are not sent when nothing did.

const (
	maxStatusBatch  = 100
	fullReportEvery = 10
)

// reports are the statuses waiting to be sent (guarded by the node's mu).
type reports struct {
	pending map[string]uint64 // key -> the version of the task group's status to send
	order   []string          // pending keys, oldest first
	wake    chan struct{}
	// periodicSent counts periodic reports; lastPeriodic is each task group's version
	// in the last one.
	periodicSent int
	lastPeriodic map[string]uint64
}

func (r *reports) enqueue(key string, version uint64) {
	if _, ok := r.pending[key]; !ok {
		r.order = append(r.order, key)
	}
	r.pending[key] = version
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *reports) drop(key string) {
	if _, ok := r.pending[key]; !ok {
		return
	}
	delete(r.pending, key)
	for i, k := range r.order {
		if k == key {
			r.order = append(r.order[:i], r.order[i+1:]...)
			break
		}
	}
}

// reportLoop sends the pending statuses, and the periodic reports when the beat
// scheduler asks, until ctx ends.
func (n *lightNode) reportLoop(ctx context.Context) {
	bo := ctxtime.NewBackoff(200*time.Millisecond, 10*time.Second)
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.rep.wake:
		case <-n.periodic:
			if err := n.periodicReport(ctx); err != nil && ctx.Err() == nil {
				n.log.Warn("periodic report failed", "err", err)
			}
			continue
		}
		for ctx.Err() == nil {
			batch := n.pendingBatch()
			if len(batch) == 0 {
				break
			}
			if err := n.send(ctx, batch); err != nil {
				if ctx.Err() != nil {
					return
				}
				n.log.Warn("cannot report status; will retry", "err", err)
				if !sleep(ctx, bo.Next()) {
					return
				}
				continue
			}
			bo.Reset()
		}
	}
}

// pendingReport is a status to send and the version it is of.
type pendingReport struct {
	report  v4.TaskGroupReport
	version uint64
}

// pendingBatch is the oldest pending statuses, up to maxStatusBatch.
func (n *lightNode) pendingBatch() []pendingReport {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]pendingReport, 0, min(len(n.rep.order), maxStatusBatch))
	for _, key := range n.rep.order[:min(len(n.rep.order), maxStatusBatch)] {
		t := n.tgs[key]
		out = append(out, pendingReport{v4.TaskGroupReport{Namespace: t.ns, Name: t.name, Status: t.status}, t.version})
	}
	return out
}

// send sends batch and drops what it sent from the pending statuses (unless a newer
// status came meanwhile) and the task groups the server does not have.
func (n *lightNode) send(ctx context.Context, batch []pendingReport) error {
	var unknown []v4.TaskGroupRef
	if len(batch) == 1 {
		r := batch[0].report
		err := n.api.AgentPutStatus(ctx, r.Namespace, r.Name, r.Status)
		switch {
		case client.StatusOf(err) == http.StatusNotFound:
			unknown = append(unknown, v4.TaskGroupRef{Namespace: r.Namespace, Name: r.Name})
		case client.StatusOf(err) == http.StatusBadRequest || client.StatusOf(err) == http.StatusUnprocessableEntity:
			// The server will never take it: retrying would block every other report.
			n.log.Error("status report refused", "namespace", r.Namespace, "name", r.Name, "err", err)
		case err != nil:
			return err
		}
	} else {
		rep := v4.AgentReport{TaskGroups: make([]v4.TaskGroupReport, len(batch))}
		for i, p := range batch {
			rep.TaskGroups[i] = p.report
		}
		res, err := n.api.AgentReport(ctx, n.name, rep)
		if err != nil {
			return err
		}
		unknown = res.Unknown
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range batch {
		key := tgKey(p.report.Namespace, p.report.Name)
		if v, ok := n.rep.pending[key]; ok && v == p.version {
			n.rep.drop(key)
		}
	}
	for _, u := range unknown {
		n.forgetLocked(tgKey(u.Namespace, u.Name))
	}
	return nil
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
	res, err := n.api.AgentReport(ctx, n.name, rep)
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
