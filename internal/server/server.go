package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/berthhq/berth/internal/agentapi"
	"github.com/berthhq/berth/internal/artifacts"
	"github.com/berthhq/berth/internal/audit"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/keylock"
	"github.com/berthhq/berth/internal/pki"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
	"github.com/berthhq/berth/internal/volumes"
)

// Server serves the API over one store. Create it with New.
type Server struct {
	store   *store.Store
	log     *slog.Logger
	maxBody int64
	// watchLimit bounds each watch stream (Config.WatchLimit).
	watchLimit store.WatchLimit
	// agents serves the agent protocol (internal/agentapi) on the same mux.
	agents *agentapi.API
	// rewrapping is held while POST /v1/encryption/rewrap runs (encryption.go).
	rewrapping sync.Mutex
	// quotaLocks holds a namespace with a resource quota from a write's admission to its
	// store write, one write at a time on this server (admit_quota.go).
	quotaLocks keylock.Locks
	metrics    *metrics
	handler    http.Handler
	mux        *httpapi.Mux
	// errs answers the routes' errors; bodyReader reads their bodies within the limits.
	errs       httpapi.Errors
	bodyReader httpapi.Bodies

	// feed keeps the scheduler's snapshot for plans. stopFeed ends the feed New started
	// when the config had none (nil otherwise: the caller owns its feed).
	feed         *feed.Feed
	stopFeed     func()
	stopFeedOnce sync.Once
	planSyncWait time.Duration
	placement    string
	bcsClusterID string // docs/compat.md
	// subMinute admits schedules that fire more than once a minute (admit_cron.go).
	subMinute bool

	// taskGroupCache is the shared cache of task groups the API's watches read (watch.go);
	// services the one of services (admit_lbgroup.go).
	taskGroupCache *cache.Cache
	services       *cache.Cache
	// planCaches are the workloads and jobs whose disruption budgets and nominations a
	// plan puts into its copy of the snapshot (controller.RestoreOwners).
	planCaches []*cache.Cache

	// id names this server in the leader election (GET /v1/cluster).
	id string
	// ca signs node certificates (internal/agentapi) and is the root agents are verified
	// against; serving is the API's certificate and identity the client certificate the
	// server presents to agents (tls.go); agentHTTP reaches agents for the logs, actions
	// and exec proxy.
	ca           *pki.CA
	serving      servingCert
	identity     *pki.Rotating
	certLifetime time.Duration
	agentHTTP    *http.Client
	// stopRenewal ends the renewal of the server's certificates; renewals counts them.
	stopRenewal context.CancelFunc
	renewals    sync.WaitGroup
	// aclCache keeps users' tokens and policies for a moment (authz.go).
	aclCache aclCache
	// aclChanges wakes the whoami watch streams when a token or a policy changed
	// (acl_changes.go); following counts the goroutine that watches etcd for it.
	aclChanges aclChanges
	following  sync.WaitGroup
	// authLimit slows down sources whose tokens fail (authlimit.go).
	authLimit authLimiter
	// maxConns and maxConnsPerSource bound the connections Serve accepts (connlimit.go).
	maxConns, maxConnsPerSource int
	// sources and bodies bound what one source, and all of them, hold (selfprotect.go).
	sources   *sourceLimits
	bodies    *bodyPool
	bodyGrace time.Duration
	lists     chan struct{} // turns of whole lists (list_stream.go)
	fair      *fairGate     // seats and queues of agents, servers and users (fairness.go)
	// auditLog receives the audited requests (nil: off); its owner closes it.
	auditLog *audit.Log
	// packagesDir is served at /packages/ when set (packages.go).
	packagesDir string
	// artifacts keeps workflow artifacts (artifacts.go); its collector runs in following.
	// peerHTTP fetches blobs that other servers hold (artifacts_peer.go).
	artifacts *artifacts.Router
	peerHTTP  *http.Client
	// webhooks calls the admission webhooks (webhooks.go, admit_webhook.go).
	webhooks *webhookState

	// streams is canceled by Close, ending every watch stream.
	streams       context.Context
	cancelStreams context.CancelFunc
}

// New builds a server over st (which the caller owns and closes). Only Logger,
// MaxBodyBytes, WatchLimit, Caches, Feed, Placement, CA, the TLS fields, PackagesDir and ID
// of cfg are used here. cfg.CA and cfg.Caches are required. Without cfg.Feed, New creates
// a feed over cfg.Caches and runs it until Close.
func New(cfg Config, st *store.Store) (*Server, error) {
	cfg = cfg.withDefaults()
	if cfg.CA == nil {
		return nil, errors.New("server: no cluster CA")
	}
	s := &Server{store: st, log: cfg.Logger, maxBody: cfg.MaxBodyBytes, feed: cfg.Feed, planSyncWait: defaultPlanSyncWait, placement: cfg.Placement}
	s.errs = httpapi.Errors{Log: cfg.Logger, SpaceAdvice: st.SpaceAdvice}
	s.bodyReader = httpapi.Bodies{Max: cfg.MaxBodyBytes, Refused: bodyError}
	if err := s.useCaches(cfg.Caches); err != nil {
		return nil, err
	}
	s.ca, s.certLifetime, s.auditLog = cfg.CA, cfg.CertLifetime, cfg.AuditLog
	serving, rotating, err := newServingCert(cfg)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if s.identity, err = newIdentity(cfg); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.serving, s.agentHTTP = serving, newAgentHTTPClient(s.ca, s.identity)
	renewCtx, stopRenewal := context.WithCancel(context.Background())
	s.stopRenewal = stopRenewal
	for _, r := range []*pki.Rotating{rotating, s.identity} {
		if r != nil {
			s.renewals.Go(func() { r.Run(renewCtx) })
		}
	}
	s.streams, s.cancelStreams = context.WithCancel(context.Background())
	s.following.Go(func() { s.followACL(s.streams) })
	s.packagesDir = cfg.PackagesDir
	s.watchLimit = cfg.WatchLimit
	if s.watchLimit.Budget == nil { // this server's streams share one
		s.watchLimit.Budget = store.NewWatchBudget(store.DefaultWatchBudget)
	}
	s.id = cfg.ID
	s.bcsClusterID = cfg.BCSClusterID
	s.subMinute = cfg.AllowSubMinuteSchedules
	if s.feed == nil {
		s.feed = feed.New(cfg.Caches, cfg.Logger)
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
	s.agents, err = agentapi.New(agentapi.Config{Store: st, Caches: cfg.Caches, Logger: cfg.Logger, Bodies: s.bodyReader,
		Streams: s.streams, CA: s.ca, CertLifetime: s.certLifetime, NodeTTL: cmp.Or(cfg.NodeTTL, controller.DefaultNodeTTL),
		MaxBeatsPerSecond: cfg.MaxHeartbeatsPerSecond, VolumeController: s.volumeCalls(cfg)})
	if err != nil {
		s.Close() // what New started so far
		return nil, fmt.Errorf("server: %w", err)
	}
	if err := s.openArtifacts(cfg); err != nil {
		s.Close()
		return nil, fmt.Errorf("server: %w", err)
	}
	s.metrics = newMetrics(st, s.watchLimit.Budget)
	s.webhooks = s.newWebhookState(cfg)
	if cfg.ControllerMetrics != nil {
		s.metrics.registry.MustRegister(cfg.ControllerMetrics.Collectors()...)
	}
	s.sources, s.bodies, s.bodyGrace = newSourceLimits(), newBodyPool(bodyBudget), cmp.Or(cfg.bodyGrace, bodyGrace)
	s.lists = make(chan struct{}, wholeLists)
	s.fair = newFairGate(cfg.APISeats)
	s.fair.knownCredential = s.aclCache.knows
	s.metrics.registry.MustRegister(s.fair.collectors()...)
	s.maxConns, s.maxConnsPerSource = cfg.MaxConnections, cfg.MaxConnectionsPerSource
	s.mux = s.routes()
	s.handler = s.instrument(s.protect(s.fair.handler(s.maintenanceGuard(s.mux))))
	return s, nil
}

// volumeCalls is what makes the claims' CSI controller calls: cfg's, else the agent
// client's (csi_call.go).
func (s *Server) volumeCalls(cfg Config) volumes.VolumeController {
	if cfg.VolumeController != nil {
		return cfg.VolumeController
	}
	return csiCalls{s}
}

// Handler returns the HTTP handler of the whole API.
func (s *Server) Handler() http.Handler { return s.handler }

// Metrics returns the handler of /metrics (also mounted in Handler).
func (s *Server) Metrics() http.Handler { return s.metrics.handler() }

// ConnState counts the connections of an http.Server serving this Server's API (its
// ConnState hook) for the metrics.
func (s *Server) ConnState(c net.Conn, st http.ConnState) { s.metrics.connState(c, st) }

// Close ends open watch streams, so an HTTP server shutdown does not wait for them, and
// stops the feed New started. The store is not closed. Close may be called several times.
func (s *Server) Close() {
	s.cancelStreams()
	s.following.Wait()
	s.stopRenewal()
	s.renewals.Wait()
	if s.stopFeed != nil {
		s.stopFeedOnce.Do(s.stopFeed)
	}
	if s.agents != nil {
		s.agents.Close()
	}
}
