// Package cache keeps one kind of object in memory from a single list and watch of the
// store, and serves many readers from it (docs/store.md, "Shared cache"): lists by an
// index (a task group's node, its namespace) without reading etcd or decoding anything,
// and watches filtered by an index value, fanned out from the one etcd watch, so five
// thousand agents watching their task groups cost one etcd watch instead of five
// thousand, each decoding every change. It plays the part of client-go's informer and
// the API server's watch cache.
//
// Objects handed out are shared by every reader: they must not be modified.
package cache

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// IndexFunc gives the value an object is indexed under (one value per object).
type IndexFunc func(v4.Object) string

// Defaults of a Cache.
const (
	// DefaultHistory is how many recent changes a cache keeps, so that a watch resuming
	// from a revision a little in the past is served from memory.
	DefaultHistory = 16384
	// DefaultSubscriberBuffer is how many changes may wait for one watcher before it is
	// cut off with a fell-behind error (it lists again).
	DefaultSubscriberBuffer = 4096
	// DefaultHistoryAge is how long a change stays in the history at most: a watcher
	// that was away longer lists again, and an idle server holds no past changes (nor
	// the objects they name) for hours after a burst.
	DefaultHistoryAge = 5 * time.Minute
)

// Retry delays after a failed list or an ended watch.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// Config configures a Cache.
type Config struct {
	Kind    v4.Kind
	Indexes map[string]IndexFunc
	// History, HistoryAge and SubscriberBuffer default to DefaultHistory,
	// DefaultHistoryAge and DefaultSubscriberBuffer.
	History          int
	HistoryAge       time.Duration
	SubscriberBuffer int
	// Keep, when set, is what the cache keeps of each object (Get, List and a watch's
	// first list see it; the changes watchers get carry the objects as written): a kind
	// whose readers need only part of some objects (a finished workflow's status and
	// policies, not its templates and nodes) keeps thousands of them in little memory.
	// It returns o itself or a new object; it must not modify o.
	Keep   func(o v4.Object) v4.Object
	Logger *slog.Logger
}

// Cache is one kind's objects, kept current. Create it with New, run it with Run; its
// methods are safe for concurrent use.
type Cache struct {
	st  *store.Store
	cfg Config
	log *slog.Logger
	// watch is the store's watch of the kind from a revision (tests break it).
	watch func(ctx context.Context, from int64) (<-chan store.Event, error)

	mu      sync.RWMutex
	objs    map[string]v4.Object                      // by "namespace/name"
	index   map[string]map[string]map[string]struct{} // index -> value -> object keys
	rev     int64                                     // the store revision the cache reflects
	history ring
	subs    map[subKey]map[*Subscription]struct{}
	// advanced is closed and replaced whenever rev moves (WaitFor).
	advanced chan struct{}

	synced     chan struct{}
	syncedOnce sync.Once
	running    sync.Mutex
}

// New returns an empty cache of cfg.Kind over st; nothing happens until Run.
func New(st *store.Store, cfg Config) *Cache {
	if cfg.History <= 0 {
		cfg.History = DefaultHistory
	}
	if cfg.HistoryAge <= 0 {
		cfg.HistoryAge = DefaultHistoryAge
	}
	if cfg.SubscriberBuffer <= 0 {
		cfg.SubscriberBuffer = DefaultSubscriberBuffer
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Cache{st: st, cfg: cfg, log: log.With("cache", string(cfg.Kind)), subs: map[subKey]map[*Subscription]struct{}{}, synced: make(chan struct{}), advanced: make(chan struct{})}
	c.watch = func(ctx context.Context, from int64) (<-chan store.Event, error) {
		return st.Watch(ctx, cfg.Kind, "", from, store.WithProgress())
	}
	c.reset(nil, 0)
	return c
}

// Synced is closed once the cache holds a full list.
func (c *Cache) Synced() <-chan struct{} { return c.synced }

// Run lists and watches the kind until ctx ends, listing again (after a backoff) whenever
// the watch ends. It returns nil when ctx ends; store failures are logged and retried.
func (c *Cache) Run(ctx context.Context) error {
	if !c.running.TryLock() {
		return errors.New("cache: already running")
	}
	defer c.running.Unlock()
	defer c.closeAll()
	backoff := minBackoff
	for {
		listed, err := c.runOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if listed {
			backoff = minBackoff
		}
		c.log.Warn("cache: listing again", "err", err, "after", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// runOnce lists the kind, replaces the cache's content with it, then applies the watch's
// changes until it ends. Watchers of the old content are cut off (they list again): what
// changed while no watch ran is not known change by change.
func (c *Cache) runOnce(ctx context.Context) (listed bool, err error) {
	objs, rev, err := c.st.List(ctx, c.cfg.Kind, "")
	if err != nil {
		return false, fmt.Errorf("list %s: %w", c.cfg.Kind, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := c.watch(wctx, rev)
	if err != nil {
		return true, fmt.Errorf("watch %s: %w", c.cfg.Kind, err)
	}
	c.mu.Lock()
	c.cutAll()
	c.reset(objs, rev)
	c.mu.Unlock()
	c.syncedOnce.Do(func() { close(c.synced) })
	// A revision's changes (one transaction's) are applied together: a reader never sees
	// half of a transaction, and a watcher gets all of it or is cut off before it.
	var pending []store.Event
	expiry := time.NewTicker(max(c.cfg.HistoryAge/4, time.Millisecond))
	defer expiry.Stop()
	for {
		var ev store.Event
		var open bool
		select {
		case ev, open = <-ch:
		case <-expiry.C:
			c.expireHistory()
			continue
		}
		if !open {
			break
		}
		if ev.Type == store.Progress { // every change up to ev.Revision is here
			if len(pending) > 0 {
				c.apply(pending)
				pending = pending[:0]
			}
			c.progressed(ev.Revision)
			continue
		}
		if ev.Type == store.Error || ev.Object == nil {
			continue
		}
		if len(pending) > 0 && ev.Revision != pending[0].Revision {
			c.apply(pending) // not marked as ended (it always is): never hold it back
			pending = pending[:0]
		}
		pending = append(pending, ev)
		if ev.RevisionEnd {
			c.apply(pending)
			pending = pending[:0]
		}
	}
	return true, fmt.Errorf("the %s watch ended", c.cfg.Kind)
}

// reset replaces the content with objs at rev; c.mu is held (or c is new).
func (c *Cache) reset(objs []v4.Object, rev int64) {
	c.objs = make(map[string]v4.Object, len(objs))
	c.index = map[string]map[string]map[string]struct{}{}
	for name := range c.cfg.Indexes {
		c.index[name] = map[string]map[string]struct{}{}
	}
	for _, o := range objs {
		c.put(objectKey(o), o)
	}
	c.rev = rev
	c.history = newRing(c.cfg.History, rev)
	c.advance()
}

// advance wakes the waiters of WaitFor; c.mu is held.
func (c *Cache) advance() {
	if c.advanced != nil {
		close(c.advanced)
	}
	c.advanced = make(chan struct{})
}

// apply records the changes of one revision and fans them out to the watchers.
func (c *Cache) apply(evs []store.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.history.expire(now.Add(-c.cfg.HistoryAge))
	for _, ev := range evs {
		key := objectKey(ev.Object)
		old := c.objs[key]
		if ev.Type == store.Deleted {
			c.unindex(key)
			delete(c.objs, key)
		} else {
			c.put(key, ev.Object)
		}
		ch := change{ev: ev, old: old, at: now}
		c.history.add(ch)
		c.fanOut(ch)
	}
	if rev := evs[len(evs)-1].Revision; rev > c.rev {
		c.rev = rev
		c.advance()
	}
}

// progressed records that every change up to rev has been applied (etcd's progress
// notification): the cache reflects rev even when rev changed nothing of its kind.
func (c *Cache) progressed(rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev > c.rev {
		c.rev = rev
		c.advance()
	}
}

// A WaitFor not answered by a change within progressAfter asks etcd how far the watch is,
// and again every progressEvery: a reader waiting for its own write (the common case)
// is answered by the change itself.
const (
	progressAfter = 5 * time.Millisecond
	progressEvery = 50 * time.Millisecond
)

// WaitFor returns once the cache reflects store revision rev (a reader then sees its own
// write of rev, or anything written before rev was read elsewhere), or with ctx's error.
// A revision that changed nothing of the cache's kind is reached through etcd's progress
// notification, which WaitFor asks for when no change comes.
func (c *Cache) WaitFor(ctx context.Context, rev int64) error {
	tick := time.NewTimer(progressAfter)
	defer tick.Stop()
	for {
		c.mu.RLock()
		at, advanced := c.rev, c.advanced
		c.mu.RUnlock()
		if at >= rev {
			return nil
		}
		select {
		case <-advanced:
		case <-tick.C:
			if err := c.st.RequestProgress(ctx); err != nil {
				c.log.Debug("cache: request progress", "err", err)
			}
			tick.Reset(progressEvery)
		case <-ctx.Done():
			return fmt.Errorf("wait for the %s cache to reach revision %d (it is at %d): %w", c.cfg.Kind, rev, at, ctx.Err())
		}
	}
}

// Get returns the cached object ns/name, if the cache holds it (shared: not to be
// modified).
func (c *Cache) Get(ns, name string) (v4.Object, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	o, ok := c.objs[ns+"/"+name]
	return o, ok
}

// Kind is the kind the cache holds.
func (c *Cache) Kind() v4.Kind { return c.cfg.Kind }

// Rev is the store revision the cache reflects.
func (c *Cache) Rev() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rev
}

// List returns the objects whose index value is value (index "" lists them all), sorted
// by namespace and name, and the revision they reflect: a watch from it misses nothing.
func (c *Cache) List(index, value string) ([]v4.Object, int64, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []v4.Object
	if index == "" {
		out = make([]v4.Object, 0, len(c.objs))
		for _, o := range c.objs {
			out = append(out, o)
		}
	} else {
		byValue, ok := c.index[index]
		if !ok {
			return nil, 0, fmt.Errorf("cache of %s: no index %q", c.cfg.Kind, index)
		}
		for key := range byValue[value] {
			out = append(out, c.objs[key])
		}
	}
	slices.SortFunc(out, func(a, b v4.Object) int {
		am, bm := a.GetMeta(), b.GetMeta()
		return cmp.Or(strings.Compare(am.Namespace, bm.Namespace), strings.Compare(am.Name, bm.Name))
	})
	return out, c.rev, nil
}

// Len is the number of objects the cache holds.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.objs)
}
