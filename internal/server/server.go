package server

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/berthhq/berth/internal/scheduler/feed"
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
	// watchLimit bounds each watch stream (Config.WatchLimit).
	watchLimit store.WatchLimit
	// rewrapping is held while POST /v1/encryption/rewrap runs (encryption.go).
	rewrapping sync.Mutex
	metrics    *metrics
	handler    http.Handler
	mux        *routeMux

	// feed keeps the scheduler's snapshot for plans. stopFeed ends the feed New started
	// when the config had none (nil otherwise: the caller owns its feed).
	feed         *feed.Feed
	stopFeed     func()
	stopFeedOnce sync.Once
	planSyncWait time.Duration
	placement    string

	// id names this server in the leader election (GET /v1/cluster).
	id string
	// joinToken authenticates agents (agent_auth.go); agentHTTP reaches them for the
	// logs and actions proxy.
	joinToken string
	// packagesDir is served at /packages/ when set (packages.go).
	packagesDir string
	agentHTTP   *http.Client

	// streams is canceled by Close, ending every watch stream.
	streams       context.Context
	cancelStreams context.CancelFunc
}

// New builds a server over st (which the caller owns and closes). Only Logger,
// MaxBodyBytes, WatchLimit, Feed, Placement, JoinToken, PackagesDir and ID of cfg are used here.
// Without cfg.Feed, New creates a feed and runs it until Close.
func New(cfg Config, st *store.Store) *Server {
	cfg = cfg.withDefaults()
	s := &Server{store: st, log: cfg.Logger, maxBody: cfg.MaxBodyBytes, feed: cfg.Feed, planSyncWait: defaultPlanSyncWait, placement: cfg.Placement}
	s.streams, s.cancelStreams = context.WithCancel(context.Background())
	s.joinToken, s.agentHTTP = cfg.JoinToken, newAgentHTTPClient()
	s.packagesDir = cfg.PackagesDir
	s.watchLimit = cfg.WatchLimit
	if s.watchLimit.Budget == nil { // this server's streams share one
		s.watchLimit.Budget = store.NewWatchBudget(store.DefaultWatchBudget)
	}
	s.id = cfg.ID
	if s.feed == nil {
		s.feed = feed.New(st, cfg.Logger)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := s.feed.Run(ctx); err != nil {
				s.log.Error("scheduler feed stopped", "err", err)
			}
		}()
		s.stopFeed = func() { cancel(); <-done }
	}
	s.metrics = newMetrics(st, s.watchLimit.Budget)
	s.mux = s.routes()
	s.handler = s.instrument(s.maintenanceGuard(s.mux))
	return s
}

// Handler returns the HTTP handler of the whole API.
func (s *Server) Handler() http.Handler { return s.handler }

// Metrics returns the handler of /metrics (also mounted in Handler).
func (s *Server) Metrics() http.Handler { return s.metrics.handler() }

// Close ends open watch streams, so an HTTP server shutdown does not wait for them, and
// stops the feed New started. The store is not closed. Close may be called several times.
func (s *Server) Close() {
	s.cancelStreams()
	if s.stopFeed != nil {
		s.stopFeedOnce.Do(s.stopFeed)
	}
}
