package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store/cache"
)

// indexNode indexes task groups by the node they are bound to (the agents' reads).
const indexNode = controller.IndexNode

// indexNamespace indexes task groups by namespace (the API's watches).
const indexNamespace = controller.IndexNamespace

// useCaches takes the server's caches from the process's registry (docs/store.md,
// "Shared cache"): task groups, with the indexes the agents' routes (internal/agentapi)
// and the API's watches read (controller.RegisterCaches declares them), and services.
func (s *Server) useCaches(caches *cache.Registry) error {
	if caches == nil {
		return errors.New("server: no cache registry")
	}
	tgs, err := caches.ForIndexed(v4.KindTaskGroup, indexNode, indexNamespace)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.taskGroupCache = tgs
	s.services = caches.For(v4.KindService)
	s.planCaches = controller.OwnerCaches(caches)
	return nil
}

// cacheSynced waits until the task group cache holds a full list, or ctx ends (503).
func (s *Server) cacheSynced(ctx context.Context) error {
	return httpapi.Synced(ctx, s.taskGroupCache)
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
	err := httpapi.CacheCurrent(wctx, s.store, c)
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
