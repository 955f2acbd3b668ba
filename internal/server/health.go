package server

import (
	"context"
	"net/http"
	"time"
)

// readyTimeout is how long /readyz waits for etcd (docs/api.md: a read within 2 s).
const readyTimeout = 2 * time.Second

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := s.store.Ready(ctx); err != nil {
		s.writeError(w, r, errorf(http.StatusServiceUnavailable, "%v", err))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
}
