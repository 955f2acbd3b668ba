package server

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/berthhq/berth/internal/store"
)

// requestTimeout bounds every non-streaming request, so an unreachable etcd gives 503
// instead of a request that hangs.
const requestTimeout = 15 * time.Second

// Server serves the API over one store. Create it with New.
type Server struct {
	store   *store.Store
	log     *slog.Logger
	maxBody int64
	metrics *metrics
	handler http.Handler
	mux     *http.ServeMux

	// streams is canceled by Close, ending every watch stream.
	streams       context.Context
	cancelStreams context.CancelFunc
}

// New builds a server over st (which the caller owns and closes). Only Logger and
// MaxBodyBytes of cfg are used here.
func New(cfg Config, st *store.Store) *Server {
	cfg = cfg.withDefaults()
	s := &Server{store: st, log: cfg.Logger, maxBody: cfg.MaxBodyBytes}
	s.streams, s.cancelStreams = context.WithCancel(context.Background())
	s.metrics = newMetrics(st)
	s.mux = s.routes()
	s.handler = s.instrument(s.mux)
	return s
}

// Handler returns the HTTP handler of the whole API.
func (s *Server) Handler() http.Handler { return s.handler }

// Metrics returns the handler of /metrics (also mounted in Handler).
func (s *Server) Metrics() http.Handler { return s.metrics.handler() }

// Close ends open watch streams, so an HTTP server shutdown does not wait for them.
// The store is not closed.
func (s *Server) Close() { s.cancelStreams() }
