package server

import (
	"context"
	"log/slog"
	"net/http"

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

// startCaches starts the server's shared caches (docs/store.md, "Shared cache"), or uses
// the one its caller runs (Config.TaskGroupCache); Close stops those it started.
func (s *Server) startCaches(st *store.Store, shared *cache.Cache) {
	if shared != nil {
		s.taskGroupCache, s.stopCaches = shared, func() {}
		return
	}
	s.taskGroupCache = newTaskGroupCache(st, s.log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.taskGroupCache.Run(ctx); err != nil {
			s.log.Error("task group cache stopped", "err", err)
		}
	}()
	s.stopCaches = func() { cancel(); <-done }
}

// cacheSynced waits until the task group cache holds a full list, or ctx ends (503).
func (s *Server) cacheSynced(ctx context.Context) error {
	select {
	case <-s.taskGroupCache.Synced():
		return nil
	case <-ctx.Done():
		return errorf(http.StatusServiceUnavailable, "the task group cache is not synced yet: %v", ctx.Err())
	}
}

// cacheCurrent waits until the task group cache reflects every write that completed
// before the call (a list must not miss a task group just written), or ctx ends (503).
func (s *Server) cacheCurrent(ctx context.Context) error {
	if err := s.cacheSynced(ctx); err != nil {
		return err
	}
	rev, err := s.store.Revision(ctx)
	if err != nil {
		return err
	}
	if err := s.taskGroupCache.WaitFor(ctx, rev); err != nil {
		return errorf(http.StatusServiceUnavailable, "the task group cache is behind etcd: %v", err)
	}
	return nil
}
