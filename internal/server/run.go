// Package server is berth's API server: the REST API of docs/api.md over the store, with
// watch streams, event records, health and Prometheus metrics. Run serves it on its own;
// New gives the handler so another component (a dev-mode agent) can share the process.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/berthhq/berth/internal/audit"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/pki"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
)

// Defaults of Config.
const (
	DefaultListen       = "127.0.0.1:7470"
	DefaultMaxBodyBytes = 2 << 20
	shutdownGrace       = 5 * time.Second
	// idleTimeout is how long a kept-alive connection may wait for its next request.
	// Longer than agents keep theirs (6 minutes): an agent whose task
	// groups do not change calls only every five minutes (its full report), and a
	// connection closed between two reports costs a TLS handshake at the next status
	// burst, thousands at once (a third of the server's CPU in a 5,000-node burst). The
	// connection limit (--max-connections) still bounds them all.
	idleTimeout = 7 * time.Minute
	// h2Streams, h2StreamBuffer and h2ConnBuffer bound an HTTP/2 connection: streams at
	// once (a browser tab needs a few watches), and the bytes its client may send ahead of
	// the server per stream and per connection (Go's defaults: 250 streams, 1 MiB a
	// stream).
	h2Streams      = 100
	h2StreamBuffer = 256 << 10
	h2ConnBuffer   = 1 << 20
)

// Config configures a server.
type Config struct {
	// Listen is the TCP address to serve on (default 127.0.0.1:7470; port 0 picks one).
	Listen string
	// DataDir holds the embedded etcd's data (unused with EtcdEndpoints) and, by default,
	// the encryption key file.
	DataDir string
	// EncryptionKeyFile holds the keys that seal secrets at rest (default
	// DataDir/encryption.key, written on the first start or when joining; docs/security.md).
	EncryptionKeyFile string
	// EtcdEndpoints selects an external etcd cluster instead of the embedded one.
	EtcdEndpoints []string
	// EtcdCAFile, EtcdCertFile and EtcdKeyFile are the TLS of an external etcd: the CA
	// that verifies it, and the client certificate and key berth presents.
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
	// EtcdQuotaBytes is the embedded etcd's space quota (0: store.DefaultQuotaBytes).
	EtcdQuotaBytes int64
	// EtcdCompactionInterval is how often etcd's history is compacted (0: never); see
	// store.Config.CompactionInterval.
	EtcdCompactionInterval time.Duration
	// MaxBodyBytes limits request bodies (default 2 MiB); larger ones get 413.
	MaxBodyBytes int64
	// WatchLimit bounds what one watch stream holds for a client that falls behind
	// (default store.StreamWatchLimit), and with its Budget what all of them hold
	// together (default store.DefaultWatchBudget); past it a stream ends with a 410 line.
	WatchLimit store.WatchLimit
	// Logger receives access logs (debug) and errors; default slog.Default().
	Logger *slog.Logger
	// OnReady, if set, is called with the bound address once the server accepts connections.
	OnReady func(addr string)
	// OnManagementToken, if set, receives the management token made at the cluster's
	// first start, the one time it is made (`berth server` prints it).
	OnManagementToken func(token string)
	// Feed, if set, is the scheduler snapshot feed plans read; its owner runs it. Run
	// always runs its own; New starts one when this is nil.
	Feed *feed.Feed
	// Caches is the process's cache registry (docs/store.md, "Shared cache"), read by the
	// agents' routes, the API's task group watches, the scheduler's feed and the
	// controllers, with the controllers' indexes declared (controller.RegisterCaches).
	// New requires it; Run makes and runs it.
	Caches *cache.Registry
	// ControllerMetrics, when set, are the controllers' and the scheduler's metrics,
	// served on the server's /metrics. Run sets it for the controllers it runs.
	ControllerMetrics *controller.Metrics
	// Placement is the cluster-wide scoring strategy, scheduler.Spread (default) or
	// scheduler.Binpack; an application's berth.io/placement annotation overrides it.
	Placement string
	// Cluster is the cluster part of task group IDs (default "berth").
	Cluster string
	// BCSClusterID, when set, is the only BCS-ClusterID header BCS's API accepts
	// (docs/compat.md); empty accepts any.
	BCSClusterID string
	// PackagesDir, when set, is served read-only at /packages/ (a package repository for
	// process uris, as BCS had one; `berth dev` serves the demo's package this way).
	PackagesDir string
	// JoinToken, when set, is a server join token ("berth-<id>.<secret>") Run makes sure the
	// cluster knows: agents and servers can join with it (docs/security.md, Join tokens).
	// Without it, the first start with a data dir creates one.
	JoinToken string
	// CA is the cluster CA; Run reads it from etcd, or creates it on the cluster's first
	// start. New requires it.
	CA *pki.CA
	// TLSCertFile and TLSKeyFile are the operator's serving certificate and key (read again
	// when they change); without them the cluster CA issues the server's certificate for
	// TLSSANs, the listen address, the host name and loopback, renewed before it expires.
	TLSCertFile, TLSKeyFile string
	TLSSANs                 []string
	// CertLifetime is how long the certificates the server issues are valid (default
	// pki.CertLifetime); each is renewed two thirds into it.
	CertLifetime time.Duration
	// AuditLog receives audited requests (New); Run opens it from AuditLogFile (default
	// DataDir/audit.log, "off" for none), rotated past AuditLogMaxBytes keeping
	// AuditLogMaxFiles old files.
	AuditLog         *audit.Log
	AuditLogFile     string
	AuditLogMaxBytes int64
	AuditLogMaxFiles int
	// InsecureListen, when set, also serves the API over plain HTTP on this loopback
	// address (development only; agents cannot use it).
	InsecureListen string
	// MaxConnections bounds the API's open connections (0: the file descriptor limit
	// less a reserve for the server's own files; connlimit.go).
	MaxConnections int
	// MaxConnectionsPerSource bounds the connections of one source address (0: half of
	// MaxConnections), so that one client cannot take every connection.
	MaxConnectionsPerSource int
	// bodyGrace replaces the time a slow body has before its minimum rate applies
	// (tests; selfprotect.go).
	bodyGrace time.Duration
	// NodeTTL is how long an agent may stay silent before its node is Lost (default 10 s).
	NodeTTL time.Duration
	// ServiceCIDR is the range of the services' virtual IPs (default
	// controller.DefaultServiceCIDR).
	ServiceCIDR netip.Prefix
	// DependencyGC is how long an unused dependency pod is kept (default 5 minutes).
	DependencyGC time.Duration
	// Member, when set, makes the embedded etcd a member of a cluster of servers with
	// stable URLs, joining one with Member.Join (docs/ha.md).
	Member *store.MemberConfig
	// ID names this server in the leader election (default host:pid).
	ID string
}

func (c Config) withDefaults() Config {
	if c.Placement == "" {
		c.Placement = scheduler.Spread
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.WatchLimit == (store.WatchLimit{}) {
		c.WatchLimit = store.StreamWatchLimit
	}
	return c
}

// Run opens the store, serves the API until ctx is done, then shuts the HTTP server down
// (gracefully, up to 5 s) and closes the store.
func Run(ctx context.Context, cfg Config) (err error) {
	cfg = cfg.withDefaults()
	keyFile := cfg.EncryptionKeyFile
	if keyFile == "" {
		if cfg.DataDir == "" {
			return errors.New("server: give --encryption-key-file (the same file on every server) or --data-dir to keep it in")
		}
		keyFile = filepath.Join(cfg.DataDir, "encryption.key")
	}
	if cfg.InsecureListen != "" {
		if err := checkLoopback(cfg.InsecureListen); err != nil {
			return fmt.Errorf("server: --insecure-listen: %w", err)
		}
	}
	etcdTLS, err := externalEtcdTLS(cfg)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	st, err := store.Open(ctx, store.Config{DataDir: cfg.DataDir, Endpoints: cfg.EtcdEndpoints, Member: cfg.Member, Logger: cfg.Logger,
		QuotaBytes: cfg.EtcdQuotaBytes, CompactionInterval: cfg.EtcdCompactionInterval, KeyFile: keyFile, EtcdTLS: etcdTLS})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if cfg.ID == "" { // member@host:pid: which server, and which process of it
		host, _ := os.Hostname()
		cfg.ID = fmt.Sprintf("%s:%d", host, os.Getpid())
		if name := st.MemberName(); name != "" {
			cfg.ID = name + "@" + cfg.ID
		}
	}
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("server: %w", cerr)
		}
	}()

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w", cfg.Listen, err)
	}
	// The caches, the feed and the leader's manager live exactly as long as Run: canceled
	// and waited for on every return. One registry of caches serves the agents' routes,
	// the controllers and the scheduler's feed: one etcd watch per kind.
	feedCtx, stopFeed := context.WithCancel(ctx)
	cfg.Caches = cache.NewRegistry(st, cfg.Logger)
	cfg.Feed = feed.New(cfg.Caches, cfg.Logger)
	if err := controller.RegisterCaches(cfg.Caches); err != nil {
		stopFeed()
		return fmt.Errorf("server: %w", err)
	}
	cfg.Caches.Start(feedCtx)
	defer func() { stopFeed(); cfg.Caches.Wait() }()

	feedDone := make(chan struct{})
	go func() {
		defer close(feedDone)
		if err := cfg.Feed.Run(feedCtx); err != nil {
			cfg.Logger.Error("scheduler feed stopped", "err", err)
		}
	}()
	defer func() { stopFeed(); <-feedDone }()

	// The controllers run on the leader only; every server campaigns (etcd election).
	cfg.ControllerMetrics = controller.NewMetrics()
	mgr := controller.NewManager(st, cfg.Feed, controller.Options{
		Placement: cfg.Placement, Cluster: cfg.Cluster, Logger: cfg.Logger,
		NodeTTL: cfg.NodeTTL, DependencyGC: cfg.DependencyGC, Caches: cfg.Caches,
		ServiceCIDR: cfg.ServiceCIDR, Metrics: cfg.ControllerMetrics,
	}, cfg.ID)
	mgrDone := make(chan struct{})
	go func() { defer close(mgrDone); mgr.Run(feedCtx) }()
	defer func() {
		stopFeed()
		select {
		case <-mgrDone:
		case <-time.After(shutdownGrace):
			// Without etcd quorum the election library's resign waits on the client
			// (concurrency.Election.Campaign resigns with the client's context); closing
			// the store ends that wait. The deferred Close above is then a no-op.
			cfg.Logger.Warn("the leader election did not stop in time (no etcd quorum?); closing the store")
			st.Close()
			<-mgrDone
		}
	}()

	if cfg.CA, err = ensureCA(ctx, st, cfg.Logger); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if err := bootstrapFiles(ctx, st, cfg); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if cfg.AuditLog, err = openAuditLog(cfg); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if cfg.AuditLog != nil {
		defer cfg.AuditLog.Close()
	}
	srv, err := New(cfg, st)
	if err != nil {
		return err
	}
	defer srv.Close()
	httpSrv := srv.httpServer(cfg.Logger)
	serveErr := make(chan error, 2)
	serving := 1 // listeners served, each ending with one value on serveErr
	maxConns := cfg.MaxConnections
	if maxConns <= 0 {
		maxConns = defaultMaxConnections()
	}
	perSource := cfg.MaxConnectionsPerSource
	if perSource <= 0 {
		perSource = max(maxConns/2, 1)
	}
	limited := newLimitListener(ln, maxConns, perSource, cfg.Logger)
	go func() { serveErr <- httpSrv.Serve(tls.NewListener(limited, srv.TLSConfig())) }()
	addr := ln.Addr().String()
	cfg.Logger.Info("berth server listening", "addr", "https://"+addr, "caHash", cfg.CA.Hash())
	if cfg.InsecureListen != "" {
		pln, err := net.Listen("tcp", cfg.InsecureListen)
		if err != nil {
			ln.Close()
			return fmt.Errorf("server: --insecure-listen %s: %w", cfg.InsecureListen, err)
		}
		serving++
		go func() { serveErr <- httpSrv.Serve(pln) }()
		cfg.Logger.Warn("serving the API without TLS on loopback (--insecure-listen): for development only", "addr", "http://"+pln.Addr().String())
	}
	if cfg.OnReady != nil {
		cfg.OnReady(addr)
	}

	select {
	case err := <-serveErr:
		return fmt.Errorf("server: serve: %w", err)
	case <-ctx.Done():
	}
	// End watch streams first: they would otherwise hold Shutdown for the whole grace period.
	srv.Close()
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := httpSrv.Shutdown(shutCtx); err != nil {
		cfg.Logger.Warn("graceful shutdown incomplete", "err", err)
		httpSrv.Close()
	}
	for range serving {
		if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("server: serve: %w", err)
		}
	}
	cfg.Logger.Info("berth server stopped")
	return nil
}

// openAuditLog opens the audit log of cfg: --audit-log, else DATA-DIR/audit.log; none
// for "off" or without a data dir.
func openAuditLog(cfg Config) (*audit.Log, error) {
	path := cfg.AuditLogFile
	switch {
	case path == "off":
		return nil, nil
	case path == "" && cfg.DataDir == "":
		cfg.Logger.Warn("no audit log: give --audit-log FILE (there is no data dir to keep it in)")
		return nil, nil
	case path == "":
		path = filepath.Join(cfg.DataDir, "audit.log")
	}
	return audit.Open(path, cfg.AuditLogMaxBytes, cfg.AuditLogMaxFiles)
}

// httpServer is the http.Server that serves srv's API: headers within ReadHeaderTimeout
// (which bounds the TLS handshake too), no WriteTimeout (watch streams last as long as
// the client stays), kept-alive connections closed after idleTimeout, and HTTP/2
// (browsers) bounded: one connection carries at most h2Streams streams, and what its
// client may send before the server reads is bounded per stream and per connection, so
// one connection cannot take the server's memory.
func (srv *Server) httpServer(log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       idleTimeout,
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams:          h2Streams,
			MaxReceiveBufferPerStream:     h2StreamBuffer,
			MaxReceiveBufferPerConnection: h2ConnBuffer,
			MaxReadFrameSize:              1 << 14,
			PingTimeout:                   15 * time.Second,
			SendPingTimeout:               time.Minute,
		},
		ConnState: srv.ConnState,
		ErrorLog:  slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
