package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/ctxtime"
)

// reporter sends status changes to the server at once, without ever blocking the
// executor: enqueue only records the latest status of a task group, and one goroutine
// (run) sends the pending ones in the order they first became pending, retrying with
// backoff while the server is unreachable. Coalescing keeps the order of one task group's
// statuses (a later one replaces an unsent earlier one, never the reverse) and bounds
// memory to one status per task group.
type reporter struct {
	send func(ctx context.Context, ns, name string, st v4.TaskGroupStatus) error
	// sendMany, when set, sends the pending statuses in one request and answers each
	// (the i-th answer the i-th status's; statusBatches): a burst of changes on a node
	// costs one request instead of one each. An error (errNoBatch among them) sends them
	// one by one with send.
	sendMany func(ctx context.Context, ps []pendingStatus) ([]v4.AgentStatusAnswer, error)
	// gone is called when the server answers 404: the task group was deleted.
	gone func(ns, name string)

	mu      sync.Mutex
	pending map[string]pendingStatus
	order   []string // keys with a pending status, oldest first
	seq     uint64
	wake    chan struct{}
}

type pendingStatus struct {
	ns, name string
	status   v4.TaskGroupStatus
	seq      uint64
}

func newReporter(send func(context.Context, string, string, v4.TaskGroupStatus) error, gone func(ns, name string)) *reporter {
	return &reporter{send: send, gone: gone, pending: map[string]pendingStatus{}, wake: make(chan struct{}, 1)}
}

// enqueue records st as the status to send for ns/name. It never blocks.
func (r *reporter) enqueue(ns, name string, st v4.TaskGroupStatus) {
	key := tgKey(ns, name)
	r.mu.Lock()
	if _, ok := r.pending[key]; !ok {
		r.order = append(r.order, key)
	}
	r.seq++
	r.pending[key] = pendingStatus{ns: ns, name: name, status: st, seq: r.seq}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// forget drops what is pending for a task group the agent removed.
func (r *reporter) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropLocked(key)
}

func (r *reporter) dropLocked(key string) {
	delete(r.pending, key)
	for i, k := range r.order {
		if k == key {
			r.order = append(r.order[:i], r.order[i+1:]...)
			break
		}
	}
}

// head returns the oldest pending status.
func (r *reporter) head() (string, pendingStatus, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.order) == 0 {
		return "", pendingStatus{}, false
	}
	key := r.order[0]
	return key, r.pending[key], true
}

// maxStatusBatch bounds the statuses one request sends (a server takes
// v4.MaxAgentStatuses).
const maxStatusBatch = 100

// oldest returns up to maxStatusBatch pending statuses, oldest first, of at most
// maxReportBytes together (statusBytes) unless the first alone weighs more.
func (r *reporter) oldest() []pendingStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]pendingStatus, 0, min(len(r.order), maxStatusBatch))
	size := 0
	for _, key := range r.order[:min(len(r.order), maxStatusBatch)] {
		p := r.pending[key]
		// At least one, and no more than a request's bytes (statuses with step outputs).
		if size += statusBytes(&p.status); len(out) > 0 && size > maxReportBytes {
			break
		}
		out = append(out, p)
	}
	return out
}

// sendBatch sends the pending statuses in one request; sent is false when it could not
// (they then go one by one), retry that the server answered some of them with an error
// to retry (they stay pending).
func (r *reporter) sendBatch(ctx context.Context, log logger) (sent, retry bool) {
	if r.sendMany == nil {
		return false, false
	}
	ps := r.oldest()
	if len(ps) == 0 {
		return false, false
	}
	answers, err := r.sendMany(ctx, ps)
	if err != nil || len(answers) != len(ps) {
		return false, false
	}
	for i, p := range ps {
		key := tgKey(p.ns, p.name)
		switch code := answers[i].Code; code {
		case http.StatusOK:
			r.sent(key, p.seq)
		case http.StatusNotFound, http.StatusForbidden:
			// Gone, or bound to another node: the agent stops it, as after a report.
			r.forget(key)
			r.gone(p.ns, p.name)
		case http.StatusBadRequest, http.StatusUnprocessableEntity:
			log.Error("status report refused", "namespace", p.ns, "name", p.name, "code", code, "err", answers[i].Message)
			r.sent(key, p.seq)
		default:
			log.Warn("cannot report status; will retry", "namespace", p.ns, "name", p.name, "code", code, "err", answers[i].Message)
			retry = true
		}
	}
	return true, retry
}

// sent drops key unless a newer status came in while the old one was being sent.
func (r *reporter) sent(key string, seq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.pending[key]; ok && p.seq == seq {
		r.dropLocked(key)
	}
}

// run sends pending statuses until ctx ends.
func (r *reporter) run(ctx context.Context, log logger) {
	bo := ctxtime.NewBackoff(200*time.Millisecond, 10*time.Second)
	for {
		key, p, ok := r.head()
		if !ok {
			select {
			case <-r.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		if sent, retry := r.sendBatch(ctx, log); sent {
			if !retry {
				bo.Reset()
			} else if !sleep(ctx, bo.Next()) {
				return
			}
			continue
		}
		err := r.send(ctx, p.ns, p.name, p.status)
		switch {
		case err == nil:
			bo.Reset()
			r.sent(key, p.seq)
		case client.StatusOf(err) == http.StatusNotFound:
			bo.Reset()
			r.forget(key)
			r.gone(p.ns, p.name)
		case ctx.Err() != nil:
			return
		case client.StatusOf(err) == http.StatusBadRequest || client.StatusOf(err) == http.StatusUnprocessableEntity:
			// The server will never take it: retrying would block every other report.
			log.Error("status report refused", "namespace", p.ns, "name", p.name, "err", err)
			r.sent(key, p.seq)
		default:
			d := bo.Next()
			log.Warn("cannot report status; will retry", "namespace", p.ns, "name", p.name, "in", d.Round(time.Millisecond), "err", err)
			if !sleep(ctx, d) {
				return
			}
		}
	}
}

// logger is the part of *slog.Logger the loops use.
type logger interface {
	Info(msg string, args ...any)
	Warn(msg string, args ...any)
	Error(msg string, args ...any)
}

// sendReport sends a report, taking its turn with the status writes (Agent.reports).
func (a *Agent) sendReport(ctx context.Context, rep v4.AgentReport) (v4.AgentReportResult, error) {
	a.reports.Lock()
	defer a.reports.Unlock()
	var res v4.AgentReportResult
	err := a.servers.do(ctx, func(c *client.Client) error {
		var err error
		res, err = c.AgentReport(ctx, a.cfg.NodeName, rep)
		return err
	})
	return res, err
}

// putStatuses sends several statuses in one request, taking its turn with the reports.
func (a *Agent) putStatuses(ctx context.Context, sts v4.AgentStatuses) (v4.AgentStatusesResult, error) {
	a.reports.Lock()
	defer a.reports.Unlock()
	var res v4.AgentStatusesResult
	err := a.servers.do(ctx, func(c *client.Client) error {
		var err error
		res, err = c.AgentPutStatuses(ctx, a.cfg.NodeName, sts)
		return err
	})
	return res, err
}

// reportPending sends ps in one report with send and returns the keys of the task groups
// the server does not have.
func reportPending(ctx context.Context, ps []pendingStatus, send func(context.Context, v4.AgentReport) (v4.AgentReportResult, error)) ([]string, error) {
	rep := v4.AgentReport{TaskGroups: make([]v4.TaskGroupReport, 0, len(ps))}
	for _, p := range ps {
		rep.TaskGroups = append(rep.TaskGroups, v4.TaskGroupReport{Namespace: p.ns, Name: p.name, Status: p.status})
	}
	res, err := send(ctx, rep)
	if err != nil {
		return nil, err
	}
	unknown := make([]string, 0, len(res.Unknown))
	for _, u := range res.Unknown {
		unknown = append(unknown, tgKey(u.Namespace, u.Name))
	}
	return unknown, nil
}

// fullReportEvery is how many periodic reports there are to one that carries every pod.
// The others carry only the pods whose status differs from the last report the server
// took, and are not sent when none does: a status change is sent at once anyway (the
// reporter), so at thousands of nodes a report of every unchanged pod every 30 s was
// most of the server's idle work. The full one catches what went astray (a write the
// server lost with a restored backup) and the pods the server no longer has.
const fullReportEvery = 10

// periodicReports is what the report loop remembers between its reports.
type periodicReports struct {
	// last is each pod's status (as JSON) in the last report the server took.
	last map[string][]byte
	sent int // periodic reports the server took
}

// periodicReport sends the periodic report (every pod's status, or only the changed
// ones; fullReportEvery) and stops and removes the pods the server does not have.
func (a *Agent) periodicReport(ctx context.Context, p *periodicReports) error {
	pods := a.exec.List()
	full := p.sent%fullReportEvery == 0
	rep := v4.AgentReport{TaskGroups: make([]v4.TaskGroupReport, 0, len(pods))}
	now := make(map[string][]byte, len(pods))
	for _, pod := range pods {
		key := tgKey(pod.Namespace, pod.Name)
		pod.Status = a.withGPUState(pod.Namespace, pod.Name, pod.Status)
		st, err := json.Marshal(pod.Status)
		if err != nil {
			return fmt.Errorf("report: encode the status of %s: %w", key, err)
		}
		now[key] = st
		if full || !bytes.Equal(p.last[key], st) {
			rep.TaskGroups = append(rep.TaskGroups, v4.TaskGroupReport{Namespace: pod.Namespace, Name: pod.Name, Status: pod.Status})
		}
	}
	if !full && len(rep.TaskGroups) == 0 {
		p.sent++
		return nil
	}
	// Sent in parts of at most maxReportBytes: the server writes what each lists.
	var unknown []v4.TaskGroupRef
	for part := range reportParts(rep, now) {
		res, err := a.sendReport(ctx, part)
		if err != nil {
			return err
		}
		unknown = append(unknown, res.Unknown...)
	}
	p.last = now
	p.sent++
	for _, u := range unknown {
		a.removeLater(u.Namespace, u.Name, "the server does not know it")
	}
	return nil
}

// reportParts splits rep into reports of at most maxReportBytes of statuses (their
// JSON, in sizes), each with one task group at least; an empty report is one part.
func reportParts(rep v4.AgentReport, sizes map[string][]byte) iter.Seq[v4.AgentReport] {
	return func(yield func(v4.AgentReport) bool) {
		part, size := v4.AgentReport{}, 0
		for _, tr := range rep.TaskGroups {
			n := len(sizes[tgKey(tr.Namespace, tr.Name)]) + 128
			if len(part.TaskGroups) > 0 && size+n > maxReportBytes {
				if !yield(part) {
					return
				}
				part, size = v4.AgentReport{}, 0
			}
			part.TaskGroups = append(part.TaskGroups, tr)
			size += n
		}
		switch {
		case len(rep.TaskGroups) == 0:
			yield(rep) // a full report of no pods is sent all the same
		case len(part.TaskGroups) > 0:
			yield(part)
		}
	}
}

// reportLoop sends the periodic report every ReportInterval.
func (a *Agent) reportLoop(ctx context.Context) {
	t := time.NewTicker(a.cfg.ReportInterval)
	defer t.Stop()
	var p periodicReports
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := a.periodicReport(ctx, &p); err != nil && ctx.Err() == nil {
			a.log.Warn("periodic report failed", "err", err)
		}
	}
}
