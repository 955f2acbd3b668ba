package cache

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"sync"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// Registry holds a process's one cache of each kind (docs/store.md, "Shared cache"), as
// client-go's shared informer factory does: whoever reads a kind (the scheduler's feed,
// the controllers, the API's agent routes) asks the registry for it, so that a kind is
// listed, watched and decoded once per process whatever the number of its readers.
//
// Readers declare the indexes they need with Index while the process is wired, before
// Start; the cache of a kind carries the union of them. A cache runs from Start, or from
// the first For after Start (a kind only the leader's controllers read is watched only
// once the server leads), until Start's context ends. Its methods are safe for
// concurrent use.
type Registry struct {
	st  *store.Store
	log *slog.Logger

	mu      sync.Mutex
	caches  map[v4.Kind]*entry
	ctx     context.Context // Start's; nil before Start
	running sync.WaitGroup
}

// entry is one kind's cache and whether it was asked for (For) and runs.
type entry struct {
	cache   *Cache
	wanted  bool
	running bool
}

// NewRegistry returns a registry of caches over st; nothing runs until Start.
func NewRegistry(st *store.Store, log *slog.Logger) *Registry {
	if log == nil {
		log = slog.Default()
	}
	return &Registry{st: st, log: log, caches: map[v4.Kind]*entry{}}
}

// entry returns kind's entry, made on first use; r.mu is held.
func (r *Registry) entry(kind v4.Kind) *entry {
	e := r.caches[kind]
	if e == nil {
		e = &entry{cache: New(r.st, Config{Kind: kind, Logger: r.log})}
		r.caches[kind] = e
	}
	return e
}

// Index adds index name to kind's cache. Before the cache runs it is added (a name given
// twice keeps its first function: the readers of an index agree on what it means); once
// the cache runs, an index it lacks is an error, so a reader wired too late fails where
// it is wired instead of finding nothing.
func (r *Registry) Index(kind v4.Kind, name string, fn IndexFunc) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entry(kind)
	if e.running {
		if !e.cache.hasIndex(name) {
			return fmt.Errorf("cache of %s: index %q asked for after the cache started", kind, name)
		}
		return nil
	}
	e.cache.addIndex(name, fn)
	return nil
}

// Keep sets what kind's cache keeps of each object (Config.Keep); like an index it is
// declared before the cache runs, by the only readers of the kind. Once the cache runs,
// declaring the same function again passes (the controllers declare their caches' needs
// at every term of leadership: a server that leads a second time runs them again), and
// another one is an error. The function is told by its code, so it must be a declared
// function, not a closure whose captured values differ.
func (r *Registry) Keep(kind v4.Kind, fn func(v4.Object) v4.Object) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entry(kind)
	if e.running {
		if !sameFunc(e.cache.cfg.Keep, fn) {
			return fmt.Errorf("cache of %s: what it keeps set after the cache started", kind)
		}
		return nil
	}
	e.cache.cfg.Keep = fn
	return nil
}

// sameFunc reports whether a and b are the same function (both nil included).
func sameFunc(a, b func(v4.Object) v4.Object) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer()
}

// Indexes adds every index of idx to kind's cache (Index).
func (r *Registry) Indexes(kind v4.Kind, idx map[string]IndexFunc) error {
	for name, fn := range idx {
		if err := r.Index(kind, name, fn); err != nil {
			return err
		}
	}
	return nil
}

// For returns the process's cache of kind. After Start it runs from the first call on;
// before, Start runs it.
func (r *Registry) For(kind v4.Kind) *Cache {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entry(kind)
	e.wanted = true
	r.run(e)
	return e.cache
}

// ForIndexed is For of a reader that reads kind by the indexes names: an error names the
// first the cache lacks (its declaration, such as controller.RegisterCaches, did not run
// before this reader was wired).
func (r *Registry) ForIndexed(kind v4.Kind, names ...string) (*Cache, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entry(kind)
	for _, name := range names {
		if !e.cache.hasIndex(name) {
			return nil, fmt.Errorf("the %s cache has no %q index (declare its readers' indexes first)", kind, name)
		}
	}
	e.wanted = true
	r.run(e)
	return e.cache, nil
}

// WaitSynced waits until every cache of caches holds a full list, or ctx ends (its error).
func WaitSynced(ctx context.Context, caches ...*Cache) error {
	for _, c := range caches {
		select {
		case <-c.Synced():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Start runs the caches asked for so far, and from then on those asked for later, until
// ctx ends; Wait waits for them to stop. A second Start does nothing.
func (r *Registry) Start(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx != nil {
		return
	}
	r.ctx = ctx
	for _, e := range r.caches {
		r.run(e)
	}
}

// run runs e's cache under Start's context if it is wanted, started and not yet
// running; r.mu is held. Once that context has ended nothing more starts: a reader that
// asks during shutdown gets a cache that never fills, and Wait is not raced by a new run.
func (r *Registry) run(e *entry) {
	if r.ctx == nil || r.ctx.Err() != nil || !e.wanted || e.running {
		return
	}
	e.running = true
	c := e.cache
	r.running.Go(func() {
		if err := c.Run(r.ctx); err != nil {
			r.log.Error("cache stopped", "cache", string(c.Kind()), "err", err)
		}
	})
}

// Wait returns once every cache Start ran has stopped (after Start's context ended).
func (r *Registry) Wait() { r.running.Wait() }

// hasIndex reports whether the cache keeps index name.
func (c *Cache) hasIndex(name string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.cfg.Indexes[name]
	return ok
}

// addIndex adds index name to a cache that does not run yet (Registry.Index); a name it
// has keeps its function.
func (c *Cache) addIndex(name string, fn IndexFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.cfg.Indexes[name]; ok {
		return
	}
	idx := maps.Clone(c.cfg.Indexes)
	if idx == nil {
		idx = map[string]IndexFunc{}
	}
	idx[name] = fn
	c.cfg.Indexes = idx
	c.reset(nil, 0)
}
