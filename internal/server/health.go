package server

import (
	"context"
	"net/http"
	"time"

	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// readyTimeout is how long /readyz waits for etcd (docs/api.md: a read within 2 s).
const readyTimeout = 2 * time.Second

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := s.store.Ready(ctx); err != nil {
		return httpapi.Errorf(http.StatusServiceUnavailable, "%v", err)
	}
	// A full etcd answers reads but refuses every write: not ready (docs/operations.md).
	noSpace, err := s.store.NoSpace(ctx)
	switch {
	case err != nil:
		return httpapi.Errorf(http.StatusServiceUnavailable, "%v", err)
	case noSpace:
		return httpapi.Errorf(http.StatusServiceUnavailable, "%v. %s", store.ErrNoSpace, s.store.SpaceAdvice())
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
	return nil
}
