package server

import (
	"context"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
)

// indexNode indexes task groups by the node they are bound to.
const indexNode = "node"

func taskGroupNode(o v4.Object) string { return o.(*v4.TaskGroup).Spec.Node }

// startCaches starts the server's shared caches (docs/store.md, "Shared cache"); Close
// stops them.
func (s *Server) startCaches(st *store.Store) {
	s.taskGroupCache = cache.New(st, cache.Config{Kind: v4.KindTaskGroup,
		Indexes: map[string]cache.IndexFunc{indexNode: taskGroupNode}, Logger: s.log})
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
