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
type statusWrite struct {
	ns, name, node string
	st             v4.TaskGroupStatus
	done           chan statusResult // buffered: the batcher never waits for the writer
}

// statusResult is what became of a statusWrite. alone: the batch could not take it, and
// the writer writes it alone. changed: the write changed the phase (the writer records
// it).
type statusResult struct {
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
	queue chan *statusWrite
	// stopped is closed when run returns: writers then write alone.
	stopped chan struct{}
	// lastRev is the revision of the last batch written (run's goroutine only): the next
	// batch waits for the cache to hold it, so it does not read its own writes' past.
	lastRev int64
}

func newStatusBatcher(st *store.Store, c *cache.Cache, log *slog.Logger) *statusBatcher {
	return &statusBatcher{store: st, cache: c, log: log, queue: make(chan *statusWrite), stopped: make(chan struct{})}
}

// submit hands w to the batcher and waits for its result; alone when the batcher has
// stopped.
func (b *statusBatcher) submit(ctx context.Context, w *statusWrite) (statusResult, error) {
	w.done = make(chan statusResult, 1)
	select {
	case b.queue <- w:
	case <-b.stopped:
		return statusResult{alone: true}, nil
	case <-ctx.Done():
		return statusResult{}, ctx.Err()
	}
	select {
	case r := <-w.done:
		return r, nil
	case <-ctx.Done():
		return statusResult{}, ctx.Err()
	}
}

// run writes batches until ctx ends.
func (b *statusBatcher) run(ctx context.Context) {
	defer close(b.stopped)
	batch := make([]*statusWrite, 0, maxStatusBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case w := <-b.queue:
			batch = append(batch[:0], w)
		}
	more:
		for len(batch) < maxStatusBatch {
			select {
			case w := <-b.queue:
				batch = append(batch, w)
			default:
				break more
			}
		}
		b.write(ctx, batch)
		clear(batch)
	}
}

// write writes one batch and answers each of its writers.
func (b *statusBatcher) write(ctx context.Context, batch []*statusWrite) {
	if b.lastRev > 0 {
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		_ = b.cache.WaitFor(wctx, b.lastRev) // behind: the batch conflicts and its writes go alone
		cancel()
	}
	var (
		objs    []v4.Object
		writers []*statusWrite
		phases  []string
		seen    = make(map[string]bool, len(batch))
	)
	for _, w := range batch {
		key := w.ns + "/" + w.name
		o, ok := b.cache.Get(w.ns, w.name)
		if !ok || seen[key] || w.st.Phase == "" {
			w.done <- statusResult{alone: true}
			continue
		}
		tg := o.(*v4.TaskGroup)
		if w.node != "" && tg.Spec.Node != w.node {
			w.done <- statusResult{alone: true} // alone, it reads etcd and says whose it is
			continue
		}
		w.st.Remote = tg.Status.Remote // the server's own (remote checks)
		w.st.KeepLastPhase(tg.Status)
		if !statusNeeded(tg.Status, w.st) {
			w.done <- statusResult{tg: tg}
			continue
		}
		seen[key] = true
		updated := *tg // the cached object is shared: write a copy with the new status
		updated.Status = w.st
		objs, writers, phases = append(objs, &updated), append(writers, w), append(phases, tg.Status.Phase)
	}
	if len(objs) == 0 {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	written, err := b.store.UpdateAll(wctx, objs)
	if err != nil {
		b.log.Warn("batched status write failed", "writes", len(objs), "err", err)
	}
	for i, w := range writers {
		switch {
		case written[i]:
			tg := objs[i].(*v4.TaskGroup)
			b.lastRev, _ = strconv.ParseInt(tg.Metadata.ResourceVersion, 10, 64)
			w.done <- statusResult{tg: tg, changed: tg.Status.Phase != phases[i]}
		case err != nil:
			w.done <- statusResult{err: err}
		default:
			w.done <- statusResult{alone: true}
		}
	}
}
