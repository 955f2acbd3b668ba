package server

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
)

// indexNode indexes task groups by the node they are bound to (the agents' reads).
const indexNode = controller.IndexNode

// indexNamespace indexes task groups by namespace (the API's watches).
const indexNamespace = controller.IndexNamespace

// newTaskGroupCache is the shared cache of task groups, with the controllers' indexes
// and the agents' (by node).
func newTaskGroupCache(st *store.Store, log *slog.Logger) *cache.Cache {
	return controller.NewTaskGroupCache(st, log, nil)
}

// catalogKinds are the kinds every agent follows whole (docs/services.md): its DNS
// server and service proxy answer for every service of the cluster.
var catalogKinds = []v4.Kind{v4.KindService, v4.KindEndpoint}

// startCaches starts the server's shared caches (docs/store.md, "Shared cache"): task
// groups, or the one its caller runs (Config.TaskGroupCache), and the catalog kinds;
// Close stops those it started.
func (s *Server) startCaches(st *store.Store, shared *cache.Cache) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	run := func(name string, c *cache.Cache) {
		wg.Go(func() {
			if err := c.Run(ctx); err != nil {
				s.log.Error("cache stopped", "cache", name, "err", err)
			}
		})
	}
	s.taskGroupCache = shared
	if shared == nil {
		s.taskGroupCache = newTaskGroupCache(st, s.log)
		run("taskgroups", s.taskGroupCache)
	}
	s.catalog = map[v4.Kind]*cache.Cache{}
	for _, k := range catalogKinds {
		s.catalog[k] = cache.New(st, cache.Config{Kind: k, Logger: s.log})
		run(k.Plural(), s.catalog[k])
	}
	s.stopCaches = func() { cancel(); wg.Wait() }
}

// cacheSynced waits until the task group cache holds a full list, or ctx ends (503).
func (s *Server) cacheSynced(ctx context.Context) error {
	return synced(ctx, s.taskGroupCache)
}

// synced waits until c holds a full list, or ctx ends (503).
func synced(ctx context.Context, c *cache.Cache) error {
	select {
	case <-c.Synced():
		return nil
	case <-ctx.Done():
		return errorf(http.StatusServiceUnavailable, "the %s cache is not synced yet: %v", c.Kind(), ctx.Err())
	}
}

// cacheCurrent waits until c reflects every write that completed before the call (a list
// must not miss an object just written), or ctx ends (503).
func (s *Server) cacheCurrent(ctx context.Context, c *cache.Cache) error {
	if err := synced(ctx, c); err != nil {
		return err
	}
	rev, err := s.store.Revision(ctx)
	if err != nil {
		return err
	}
	if err := c.WaitFor(ctx, rev); err != nil {
		return errorf(http.StatusServiceUnavailable, "the %s cache is behind etcd: %v", c.Kind(), err)
	}
	return nil
}

// cacheWaitBeforeRead is how long listCurrent waits for a cache before it reads etcd.
const cacheWaitBeforeRead = time.Second

// listCurrent lists kind's objects of every namespace as of now: from c once it reflects
// every write that completed before the call, or from etcd when c does not get there
// within cacheWaitBeforeRead (it moves past writes of other kinds only on etcd's
// progress notifications, which etcd holds back while any watch of the store catches
// up).
func (s *Server) listCurrent(ctx context.Context, c *cache.Cache) ([]v4.Object, error) {
	wctx, cancel := context.WithTimeout(ctx, cacheWaitBeforeRead)
	err := s.cacheCurrent(wctx, c)
	cancel()
	if err == nil {
		objs, _, err := c.List("", "")
		return objs, err
	}
	if ctx.Err() != nil {
		return nil, err
	}
	objs, _, err := s.store.List(ctx, c.Kind(), "")
	return objs, err
}
