package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/ctxtime"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// Finished workflows move into the workflow archive (docs/workflows.md, "The workflow
// archive") once WorkflowArchive.After passed since they ended and their task groups are
// gone: the pass over a finished workflow queues it, and one goroutine of the term
// archives the queue in batches (store.ArchiveWorkflows: tens of workflows to a
// transaction), every wfArchiveFlush. A cron's workflows stay objects: its history
// limits bound them. The same goroutine drops the archived workflows whose expiry passed,
// every wfArchiveSweep.

// WorkflowArchive says when finished workflows are archived and how long they are kept.
type WorkflowArchive struct {
	// After is how long after its end a workflow is archived; 0 archives none.
	After time.Duration
	// TTL is how long an archived workflow is kept; 0 keeps it until it is deleted (or
	// its ttlStrategy says).
	TTL time.Duration
}

const (
	wfArchiveFlush    = time.Second
	wfArchiveSweep    = 10 * time.Minute
	wfArchivePerFlush = 1000
)

// wfArchiver is the term's queue of workflows to archive.
type wfArchiver struct {
	c  *WorkflowController
	mu sync.Mutex
	// due are the workflows queued, with their status.uid and expiry.
	due map[scheduler.AppKey]archiveDue
	// refused are the UIDs of workflows too large to archive, not tried again this term.
	refused map[string]bool
}

type archiveDue struct {
	uid     string
	expires time.Time
}

// archive queues the finished workflow of the pass once its archive time came (waking
// the pass then, before).
func (p *wfPass) archive() {
	cfg := p.c.opts.WorkflowArchive
	if cfg.After <= 0 || p.wf.Metadata.Labels[v4.CronLabel(v4.KindCronWorkflow)] != "" || p.st.UID == "" {
		return
	}
	if d := p.st.FinishedAt.Add(cfg.After).Sub(p.now); d > 0 {
		p.wake(d)
		return
	}
	var expires time.Time
	if ttl, ok := p.wf.Spec.TTLStrategy.TTL(p.st.Phase); ok {
		expires = p.st.FinishedAt.Add(ttl)
	}
	if cfg.TTL > 0 && (expires.IsZero() || p.now.Add(cfg.TTL).Before(expires)) {
		expires = p.now.Add(cfg.TTL)
	}
	p.c.archiver.add(p.key, archiveDue{uid: p.st.UID, expires: expires})
}

func (a *wfArchiver) add(key scheduler.AppKey, d archiveDue) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.refused[d.uid] {
		return
	}
	if a.due == nil {
		a.due = map[scheduler.AppKey]archiveDue{}
	}
	a.due[key] = d
}

// take removes up to n queued workflows from the queue.
func (a *wfArchiver) take(n int) map[scheduler.AppKey]archiveDue {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[scheduler.AppKey]archiveDue{}
	for k, d := range a.due {
		if len(out) == n {
			break
		}
		out[k] = d
		delete(a.due, k)
	}
	return out
}

// run archives the queue every wfArchiveFlush and sweeps expired entries every
// wfArchiveSweep until ctx ends.
func (a *wfArchiver) run(ctx context.Context) {
	lastSweep := time.Time{}
	ctxtime.Every(ctx, wfArchiveFlush, func() {
		for {
			batch := a.take(wfArchivePerFlush)
			if len(batch) == 0 || ctx.Err() != nil {
				break
			}
			a.flush(ctx, batch)
		}
		if time.Since(lastSweep) >= wfArchiveSweep {
			lastSweep = time.Now()
			n, err := a.c.store.ExpireArchived(ctx, time.Now())
			if err != nil && ctx.Err() == nil {
				a.c.log.Warn("expire archived workflows", "err", err)
			} else if n > 0 {
				a.c.log.Info("dropped expired archived workflows", "count", n)
			}
		}
	})
}

// flush archives a batch, by namespace.
func (a *wfArchiver) flush(ctx context.Context, batch map[scheduler.AppKey]archiveDue) {
	byNS := map[string][]*v4.ArchivedWorkflow{}
	now := time.Now().UTC()
	for _, key := range slices.SortedFunc(maps.Keys(batch), compareAppKeys) {
		e, err := a.entry(ctx, key, batch[key], now)
		if err != nil {
			if ctx.Err() == nil {
				a.c.log.Warn("read workflow to archive", "workflow", key, "err", err)
			}
			continue
		}
		if e != nil {
			byNS[key.Namespace] = append(byNS[key.Namespace], e)
		}
	}
	for _, ns := range slices.Sorted(maps.Keys(byNS)) {
		entries := byNS[ns]
		errs, err := a.c.store.ArchiveWorkflows(ctx, ns, entries)
		if err != nil {
			if ctx.Err() == nil {
				a.c.log.Warn("archive workflows", "namespace", ns, "err", err)
			}
			continue
		}
		for i, err := range errs {
			a.outcome(entries[i], err)
		}
	}
}

// entry reads the workflow of key to archive, with its offloaded nodes; nil when it is
// no longer the finished workflow that was queued.
func (a *wfArchiver) entry(ctx context.Context, key scheduler.AppKey, d archiveDue, now time.Time) (*v4.ArchivedWorkflow, error) {
	wf, err := store.Typed[*v4.Workflow](a.c.store, v4.KindWorkflow).Get(ctx, key.Namespace, key.Name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if wf.Status.UID != d.uid || !v4.WfPhaseFinished(wf.Status.Phase) {
		return nil, nil // retried, or made anew: its next pass decides
	}
	if wf.Status.NodesOffloaded {
		nodes, err := a.c.store.WorkflowNodes(ctx, key.Namespace, key.Name, wf.Status.UID)
		if err != nil {
			return nil, err
		}
		wf.Status.Nodes, wf.Status.NodesOffloaded = nodes, false
	}
	return &v4.ArchivedWorkflow{ArchivedAt: now, ExpiresAt: d.expires, Workflow: wf}, nil
}

// outcome follows one workflow's archiving: an archived workflow's deletion reaches the
// controller through the watch (its pass deletes its offloaded nodes); one too large to
// archive stays an object, said once.
func (a *wfArchiver) outcome(e *v4.ArchivedWorkflow, err error) {
	m := e.Workflow.Metadata
	key := scheduler.AppKey{Kind: v4.KindWorkflow, Namespace: m.Namespace, Name: m.Name}
	switch {
	case err == nil:
		a.c.opts.Metrics.workflowArchived("archived")
	case errors.Is(err, store.ErrTooLarge):
		a.c.opts.Metrics.workflowArchived("too-large")
		a.mu.Lock()
		if a.refused == nil || len(a.refused) >= 10_000 {
			a.refused = map[string]bool{}
		}
		a.refused[e.Workflow.Status.UID] = true
		a.mu.Unlock()
		a.c.eventOnce("archive/"+e.Workflow.Status.UID, "too-large", key, v4.EventWarning, "NotArchived",
			fmt.Sprintf("workflow %s/%s stays an object: %v", m.Namespace, m.Name, err))
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound):
		// Changed or gone meanwhile: its next pass decides.
	default:
		a.c.log.Warn("archive workflow", "workflow", key, "err", err)
	}
}

func compareAppKeys(a, b scheduler.AppKey) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}
