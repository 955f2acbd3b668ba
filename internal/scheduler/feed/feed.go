// Package feed keeps a scheduler.Snapshot current from the process's shared caches of
// nodes, task groups and CSI volumes (internal/store/cache): it lists them, then applies
// every change their watches report, and lists again whenever a watch ends (the cache listed afresh,
// or the feed fell behind). The server's plan endpoint clones
// the snapshot; the scheduler places on it under the feed's lock.
package feed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
)

// Retry delays after a failed list or an ended watch: short at first (a compaction or a
// leader change heals at once), capped so an etcd outage does not spin.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// Feed owns a snapshot and keeps it in step with the caches. Create it with New and run
// it with Run; its methods are safe for concurrent use.
type Feed struct {
	nodes, tgs, vols *cache.Cache
	log              *slog.Logger

	mu   sync.Mutex
	snap *scheduler.Snapshot
	// fresh, when set, completes each fresh snapshot before it is swapped in (OnFresh).
	fresh func(*scheduler.Snapshot)

	synced     chan struct{}
	syncedOnce sync.Once

	running sync.Mutex // held by Run, so two Runs never feed one snapshot
}

// New returns a feed over the caches of nodes, task groups and volumes of caches, with an empty
// snapshot; nothing happens until Run. The objects the caches hand out are shared: the
// snapshot copies what it keeps.
func New(caches *cache.Registry, log *slog.Logger) *Feed {
	if log == nil {
		log = slog.Default()
	}
	return &Feed{nodes: caches.For(v4.KindNode), tgs: caches.For(v4.KindTaskGroup), vols: caches.For(v4.KindVolume),
		log: log, snap: scheduler.NewSnapshot(), synced: make(chan struct{})}
}

// OnFresh sets fn to complete each snapshot the feed lists afresh, before it replaces the
// live one: the state the store's nodes, task groups and volumes do not hold (the
// controllers' disruption budgets and the holds of nominations), which a fresh
// snapshot would otherwise lose until each owner's next pass. fn must not call the
// feed.
func (f *Feed) OnFresh(fn func(s *scheduler.Snapshot)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fresh = fn
}

// Synced is closed once the snapshot holds a full list of nodes, task groups and volumes.
func (f *Feed) Synced() <-chan struct{} { return f.synced }

// With runs fn on the live snapshot under the feed's lock; fn must not keep the snapshot.
func (f *Feed) With(fn func(s *scheduler.Snapshot)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f.snap)
}

// Clone returns an independent copy of the snapshot, for dry runs.
func (f *Feed) Clone() *scheduler.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snap.Clone()
}

// Run feeds the snapshot until ctx is done, then returns nil. Store failures are logged
// and retried with backoff, never returned: the scheduler needs the feed for as long as
// the server runs. Run may be called again after it returned; it lists afresh.
func (f *Feed) Run(ctx context.Context) error {
	if !f.running.TryLock() {
		return errors.New("feed: already running")
	}
	defer f.running.Unlock()
	backoff := minBackoff
	for {
		listed, err := f.runOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if listed {
			backoff = minBackoff // the store answered: the next attempt is not a tight loop
		}
		f.log.Warn("scheduler feed: listing again", "err", err, "after", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// runOnce lists the three kinds into a fresh snapshot, swaps it in, then applies watch events
// until a watch ends. listed says whether the lists succeeded. A fresh snapshot (rather
// than a merge) drops whatever was deleted while no watch was running.
func (f *Feed) runOnce(ctx context.Context) (listed bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends both watches' goroutines
	nodes, nodeCh, err := listWatch(ctx, f.nodes)
	if err != nil {
		return false, err
	}
	tgs, tgCh, err := listWatch(ctx, f.tgs)
	if err != nil {
		return false, err
	}
	vols, volCh, err := listWatch(ctx, f.vols)
	if err != nil {
		return false, err
	}
	snap := scheduler.NewSnapshot()
	for _, n := range nodes {
		snap.SetNode(n.(*v4.Node))
	}
	for _, tg := range tgs {
		snap.SetTaskGroup(tg.(*v4.TaskGroup))
	}
	for _, v := range vols {
		snap.SetVolume(v.(*v4.CSIVolume))
	}
	f.mu.Lock()
	fresh := f.fresh
	f.mu.Unlock()
	if fresh != nil {
		fresh(snap) // not shared yet: no lock
	}
	f.mu.Lock()
	f.snap = snap
	f.mu.Unlock()
	f.syncedOnce.Do(func() { close(f.synced) })
	f.log.Debug("scheduler feed synced", "nodes", len(nodes), "taskgroups", len(tgs), "volumes", len(vols))

	for {
		var ev store.Event
		var ok bool
		select {
		case <-ctx.Done():
			return true, ctx.Err()
		case ev, ok = <-nodeCh:
		case ev, ok = <-tgCh:
		case ev, ok = <-volCh:
		}
		switch {
		case !ok:
			return true, errors.New("a watch ended")
		case ev.Type == store.Error:
			return true, fmt.Errorf("watch: %w", ev.Err)
		}
		f.apply(ev)
	}
}

// listWatch lists c once it is synced and watches it from the list's revision, so nothing
// between the list and the watch is lost.
func listWatch(ctx context.Context, c *cache.Cache) ([]v4.Object, <-chan store.Event, error) {
	if err := cache.WaitSynced(ctx, c); err != nil {
		return nil, nil, err
	}
	objs, rev, err := c.List("", "")
	if err != nil {
		return nil, nil, fmt.Errorf("list %s: %w", c.Kind().Plural(), err)
	}
	ch, err := c.Watch(ctx, "", "", rev)
	if err != nil {
		return nil, nil, fmt.Errorf("watch %s: %w", c.Kind().Plural(), err)
	}
	return objs, ch, nil
}

// apply applies one change of a node, a task group or a volume to the snapshot.
func (f *Feed) apply(ev store.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch o := ev.Object.(type) {
	case *v4.Node:
		if ev.Type == store.Deleted {
			f.snap.RemoveNode(o.Metadata.Name)
			return
		}
		f.snap.SetNode(o)
	case *v4.TaskGroup:
		if ev.Type == store.Deleted {
			f.snap.RemoveTaskGroup(o.Metadata.Namespace, o.Metadata.Name)
			return
		}
		f.snap.SetTaskGroup(o)
	case *v4.CSIVolume:
		if ev.Type == store.Deleted {
			f.snap.RemoveVolume(o.Metadata.Namespace, o.Metadata.Name)
			return
		}
		f.snap.SetVolume(o)
	default:
		f.log.Warn("scheduler feed: a change without a node, a task group or a volume", "type", ev.Type)
	}
}
