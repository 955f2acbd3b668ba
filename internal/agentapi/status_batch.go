package agentapi

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
)

// The agents' status writes are batched (docs/store.md, "Status writes"): one goroutine
// takes every write waiting at that moment, reads each task group from the shared cache
// instead of etcd, and writes them all in one transaction that compares each one's
// revision. Writes pile up while a transaction is in flight, so the busier the server,
// the larger the batches; an idle one writes each at once. Whatever a batch cannot take
// (a task group the cache does not hold or holds at another node, two writes of one task
// group, a batch in which one changed behind the cache) is written alone, as before,
// reading etcd.

// maxStatusBatch bounds the writes of one transaction.
const maxStatusBatch = 500

// statusWrite is one agent's write of one task group's status, waiting for its batch.
// The writes of one request go to the batcher together (a group: one channel send for
// all of them), and share done.
type statusWrite struct {
	ns, name, node string
	st             v4.TaskGroupStatus
	i              int               // the write's place in its group
	done           chan statusResult // buffered for the whole group: the batcher never waits for the writer
}

// statusResult is what became of a statusWrite (i: its place in its group). alone: the
// batch could not take it, and the writer writes it alone. changed: the write changed
// the phase (the writer records it).
type statusResult struct {
	i       int
	tg      *v4.TaskGroup
	changed bool
	alone   bool
	err     error
}

// statusBatcher writes statusWrites in batches until its context ends.
type statusBatcher struct {
	store *store.Store
	cache *cache.Cache
	log   *slog.Logger
	queue chan []statusWrite
	// stopped is closed when run returns: writers then write alone.
	stopped chan struct{}
	// lastRev is the revision of the last batch written (run's goroutine only): the next
	// batch waits for the cache to hold it, so it does not read its own writes' past.
	lastRev int64
}

func newStatusBatcher(st *store.Store, c *cache.Cache, log *slog.Logger) *statusBatcher {
	return &statusBatcher{store: st, cache: c, log: log, queue: make(chan []statusWrite), stopped: make(chan struct{})}
}

// submit hands a group of writes to the batcher and waits for their results (the i-th
// the i-th write's); all alone when the batcher has stopped.
func (b *statusBatcher) submit(ctx context.Context, group []statusWrite) ([]statusResult, error) {
	out := make([]statusResult, len(group))
	done := make(chan statusResult, len(group))
	for i := range group {
		group[i].i, group[i].done = i, done
	}
	select {
	case b.queue <- group:
	case <-b.stopped:
		for i := range out {
			out[i] = statusResult{i: i, alone: true}
		}
		return out, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for range group {
		select {
		case r := <-done:
			out[r.i] = r
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, nil
}

// run writes batches until ctx ends.
func (b *statusBatcher) run(ctx context.Context) {
	defer close(b.stopped)
	batch := make([]*statusWrite, 0, maxStatusBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case g := <-b.queue:
			batch = appendGroup(batch[:0], g)
		}
	more:
		for len(batch) < maxStatusBatch {
			select {
			case g := <-b.queue:
				batch = appendGroup(batch, g)
			default:
				break more
			}
		}
		b.write(ctx, batch)
		clear(batch)
	}
}

// appendGroup appends a group's writes to a batch (a batch may so pass maxStatusBatch
// by a group, which MaxAgentStatuses bounds).
func appendGroup(batch []*statusWrite, g []statusWrite) []*statusWrite {
	for i := range g {
		batch = append(batch, &g[i])
	}
	return batch
}

// write writes one batch and answers each of its writers.
func (b *statusBatcher) write(ctx context.Context, batch []*statusWrite) {
	if b.lastRev > 0 {
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		_ = b.cache.WaitFor(wctx, b.lastRev) // behind: the batch conflicts and its writes go alone
		cancel()
	}
	var (
		// The copies written, each with its writer and its phase before: one array of
		// them, not an object and three slices growing.
		writes = make([]batchedStatus, 0, len(batch))
		seen   = make(map[v4.TaskGroupRef]struct{}, len(batch))
	)
	for _, w := range batch {
		key := v4.TaskGroupRef{Namespace: w.ns, Name: w.name}
		_, twice := seen[key]
		o, ok := b.cache.Get(w.ns, w.name)
		if !ok || twice || w.st.Phase == "" {
			w.done <- statusResult{i: w.i, alone: true}
			continue
		}
		tg := o.(*v4.TaskGroup)
		if w.node != "" && tg.Spec.Node != w.node {
			w.done <- statusResult{i: w.i, alone: true} // alone, it reads etcd and says whose it is
			continue
		}
		w.st.Remote = tg.Status.Remote // the server's own (remote checks)
		w.st.KeepLastPhase(tg.Status)
		if !statusNeeded(tg.Status, w.st) {
			w.done <- statusResult{i: w.i, tg: tg}
			continue
		}
		seen[key] = struct{}{}
		writes = append(writes, batchedStatus{tg: *tg, w: w, was: tg.Status.Phase}) // the cached object is shared: write a copy
		writes[len(writes)-1].tg.Status = w.st
	}
	if len(writes) == 0 {
		return
	}
	objs := make([]v4.Object, len(writes))
	for i := range writes {
		objs[i] = &writes[i].tg
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	written, err := b.store.UpdateAll(wctx, objs)
	if err != nil {
		b.log.Warn("batched status write failed", "writes", len(objs), "err", err)
	}
	for i := range writes {
		bs := &writes[i]
		switch {
		case written[i]:
			b.lastRev, _ = strconv.ParseInt(bs.tg.Metadata.ResourceVersion, 10, 64)
			bs.w.done <- statusResult{i: bs.w.i, tg: &bs.tg, changed: bs.tg.Status.Phase != bs.was}
		case err != nil:
			bs.w.done <- statusResult{i: bs.w.i, err: err}
		default:
			bs.w.done <- statusResult{i: bs.w.i, alone: true}
		}
	}
}

// batchedStatus is one write a batch takes: the task group as written, its writer, and
// its phase before.
type batchedStatus struct {
	tg  v4.TaskGroup
	w   *statusWrite
	was string
}
