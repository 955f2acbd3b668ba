// Package feed keeps a scheduler.Snapshot current from the store: it lists nodes and task
// groups, then applies every change their watches report, and lists again whenever a
// watch ends (etcd compacted it, the connection broke). The server's plan endpoint clones
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
)

// Retry delays after a failed list or an ended watch: short at first (a compaction or a
// leader change heals at once), capped so an etcd outage does not spin.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// Feed owns a snapshot and keeps it in step with the store. Create it with New and run it
// with Run; its methods are safe for concurrent use.
type Feed struct {
	st  *store.Store
	log *slog.Logger

	mu   sync.Mutex
	snap *scheduler.Snapshot

	// tgs, when set, is where task groups come from instead of the store (UseTaskGroups).
	tgs TaskGroupSource

	synced     chan struct{}
	syncedOnce sync.Once

	running sync.Mutex // held by Run, so two Runs never feed one snapshot
}

// New returns a feed over st with an empty snapshot; nothing happens until Run.
func New(st *store.Store, log *slog.Logger) *Feed {
	if log == nil {
		log = slog.Default()
	}
	return &Feed{st: st, log: log, snap: scheduler.NewSnapshot(), synced: make(chan struct{})}
}

// TaskGroupSource is a shared cache of task groups (internal/store/cache): one etcd watch
// and one decoding of each change for every reader, where the feed's own watch decoded
// each change once more.
type TaskGroupSource interface {
	Synced() <-chan struct{}
	List(index, value string) ([]v4.Object, int64, error)
	Watch(ctx context.Context, index, value string, from int64) (<-chan store.Event, error)
}

// UseTaskGroups makes the feed read task groups from src instead of the store; call it
// before Run. The objects src hands out are shared: the snapshot copies what it keeps.
func (f *Feed) UseTaskGroups(src TaskGroupSource) { f.tgs = src }

// Synced is closed once the snapshot holds a full list of nodes and task groups.
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

// runOnce lists both kinds into a fresh snapshot, swaps it in, then applies watch events
// until a watch ends. listed says whether the lists succeeded. A fresh snapshot (rather
// than a merge) drops whatever was deleted while no watch was running.
func (f *Feed) runOnce(ctx context.Context) (listed bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends both watches' goroutines
	nodes, nodeRev, err := store.Typed[*v4.Node](f.st, v4.KindNode).List(ctx, "")
	if err != nil {
		return false, fmt.Errorf("list nodes: %w", err)
	}
	tgs, tgCh, err := f.taskGroups(ctx)
	if err != nil {
		return false, err
	}
	// Watch from the list's revision, so nothing between the list and the watch is lost.
	nodeCh, err := store.Typed[*v4.Node](f.st, v4.KindNode).Watch(ctx, "", nodeRev)
	if err != nil {
		return true, fmt.Errorf("watch nodes: %w", err)
	}

	snap := scheduler.NewSnapshot()
	for _, n := range nodes {
		snap.SetNode(n)
	}
	for _, tg := range tgs {
		snap.SetTaskGroup(tg)
	}
	f.mu.Lock()
	f.snap = snap
	f.mu.Unlock()
	f.syncedOnce.Do(func() { close(f.synced) })
	f.log.Debug("scheduler feed synced", "nodes", len(nodes), "taskgroups", len(tgs))

	for {
		select {
		case <-ctx.Done():
			return true, ctx.Err()
		case ev, ok := <-nodeCh:
			if !ok {
				return true, errors.New("node watch ended")
			}
			f.applyNode(ev)
		case ev, ok := <-tgCh:
			if !ok {
				return true, errors.New("task group watch ended")
			}
			if ev.Type == store.Error {
				return true, fmt.Errorf("task group watch: %w", ev.Err)
			}
			f.applyTaskGroup(ev)
		}
	}
}

// taskGroups lists the task groups and watches them from the list's revision, through
// the shared cache when the feed has one (once it synced), else from the store.
func (f *Feed) taskGroups(ctx context.Context) ([]*v4.TaskGroup, <-chan store.Event, error) {
	if f.tgs == nil {
		tgs, rev, err := store.Typed[*v4.TaskGroup](f.st, v4.KindTaskGroup).List(ctx, "")
		if err != nil {
			return nil, nil, fmt.Errorf("list task groups: %w", err)
		}
		ch, err := f.st.Watch(ctx, v4.KindTaskGroup, "", rev)
		if err != nil {
			return nil, nil, fmt.Errorf("watch task groups: %w", err)
		}
		return tgs, ch, nil
	}
	select {
	case <-f.tgs.Synced():
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	objs, rev, err := f.tgs.List("", "")
	if err != nil {
		return nil, nil, fmt.Errorf("list task groups: %w", err)
	}
	ch, err := f.tgs.Watch(ctx, "", "", rev)
	if err != nil {
		return nil, nil, fmt.Errorf("watch task groups: %w", err)
	}
	tgs := make([]*v4.TaskGroup, 0, len(objs))
	for _, o := range objs {
		if tg, ok := o.(*v4.TaskGroup); ok {
			tgs = append(tgs, tg)
		}
	}
	return tgs, ch, nil
}

func (f *Feed) applyNode(ev store.TypedEvent[*v4.Node]) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ev.Type == store.Deleted {
		f.snap.RemoveNode(ev.Object.Metadata.Name)
		return
	}
	f.snap.SetNode(ev.Object)
}

func (f *Feed) applyTaskGroup(ev store.Event) {
	tg, ok := ev.Object.(*v4.TaskGroup)
	if !ok {
		f.log.Warn("scheduler feed: a task group change without a task group", "type", ev.Type)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if ev.Type == store.Deleted {
		f.snap.RemoveTaskGroup(tg.Metadata.Namespace, tg.Metadata.Name)
		return
	}
	f.snap.SetTaskGroup(tg)
}
