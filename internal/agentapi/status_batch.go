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
// instead of etcd (or, while the cache has not caught up with the batcher's own last
// writes, from the copies it wrote), and writes them all in one transaction that compares
// each one's revision. Writes pile up while a transaction is in flight, so the busier
// the server, the larger the batches; an idle one writes each at once. Whatever a batch cannot take
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
	// written holds the task groups that batches wrote, as written, until the cache
	// holds their revision (run's goroutine only): a batch reads a task group it finds
	// here instead of the cache's older copy, which would fail its comparison. Batches
	// so follow one another without waiting for the cache to catch up with the one
	// before (that wait was half of a batch's time under a burst).
	written map[v4.TaskGroupRef]ownWrite
}

// ownWrite is a task group as a batch wrote it, and the revision it was written at.
type ownWrite struct {
	tg  *v4.TaskGroup
	rev int64
}

// maxOwnWrites bounds the batcher's copies of its writes: past it (a cache that stopped
// following etcd), they are dropped, and the batches' comparisons fail until the cache
// catches up, their writes going alone.
const maxOwnWrites = 4 * maxStatusBatch

func newStatusBatcher(st *store.Store, c *cache.Cache, log *slog.Logger) *statusBatcher {
	return &statusBatcher{
		store: st, cache: c, log: log,
		queue: make(chan []statusWrite), stopped: make(chan struct{}),
		written: map[v4.TaskGroupRef]ownWrite{},
	}
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
	b.forgetCached()
	var (
		// The copies written, each with its writer and its phase before: one array of
		// them, not an object and three slices growing.
		writes = make([]batchedStatus, 0, len(batch))
		seen   = make(map[v4.TaskGroupRef]struct{}, len(batch))
	)
	for _, w := range batch {
		key := v4.TaskGroupRef{Namespace: w.ns, Name: w.name}
		_, twice := seen[key]
		tg, ok := b.current(key)
		if !ok || twice || w.st.Phase == "" {
			w.done <- statusResult{i: w.i, alone: true}
			continue
		}
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
			b.remember(&bs.tg)
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

// current is the task group as last stored, as far as this server knows: the cache's,
// or the batcher's own copy when the cache does not hold that write yet.
func (b *statusBatcher) current(key v4.TaskGroupRef) (*v4.TaskGroup, bool) {
	if own, ok := b.written[key]; ok {
		return own.tg, true
	}
	o, ok := b.cache.Get(key.Namespace, key.Name)
	if !ok {
		return nil, false
	}
	return o.(*v4.TaskGroup), true
}

// remember keeps the copy of a task group a batch wrote (its resourceVersion the write's).
func (b *statusBatcher) remember(tg *v4.TaskGroup) {
	rev, err := strconv.ParseInt(tg.Metadata.ResourceVersion, 10, 64)
	if err != nil {
		return
	}
	if len(b.written) >= maxOwnWrites {
		clear(b.written)
	}
	b.written[v4.TaskGroupRef{Namespace: tg.Metadata.Namespace, Name: tg.Metadata.Name}] = ownWrite{tg: tg, rev: rev}
}

// forgetCached drops the copies whose write the cache holds: from there on the cache
// has them, or anything written after them.
func (b *statusBatcher) forgetCached() {
	if len(b.written) == 0 {
		return
	}
	held := b.cache.Rev()
	for key, own := range b.written {
		if own.rev <= held {
			delete(b.written, key)
		}
	}
}
