// Package server is berth's HTTP API: the REST API of docs/api.md over what it is handed
// (the store, the process's cache registry, the scheduler's feed, the cluster CA, the
// audit log), with watch streams, event records, health and Prometheus metrics. New
// builds it and Serve serves it on the listeners it is given; internal/daemon assembles
// the processes that run it.
package server

import (
	"log/slog"
	"time"

	"github.com/berthhq/berth/internal/audit"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/pki"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
	"github.com/berthhq/berth/internal/volumes"
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
	// h2HeaderTable bounds each HPACK table of an HTTP/2 connection, the one that
	// decodes its client's headers and the one that encodes the server's (Go's default
	// is 4 KiB each). A connection holds its tables as long as it lives, and every agent
	// keeps one open: at 5,000 nodes 4 KiB a table was 22 MB of the server's heap. An
	// agent sends the same few headers on each request (its user agent, the host, the
	// content type), which fit in 1 KiB; a path that does not fit is sent literally, a few
	// bytes more on the wire.
	h2HeaderTable = 1 << 10
)

// Config configures a server.
type Config struct {
	// Listen is the TCP address the API is served on (default 127.0.0.1:7470): the
	// server's own certificate names it.
	Listen string
	// MaxBodyBytes limits request bodies (default 2 MiB); larger ones get 413.
	MaxBodyBytes int64
	// WatchLimit bounds what one watch stream holds for a client that falls behind
	// (default store.StreamWatchLimit), and with its Budget what all of them hold
	// together (default store.DefaultWatchBudget); past it a stream ends with a 410 line.
	WatchLimit store.WatchLimit
	// Logger receives access logs (debug) and errors; default slog.Default().
	Logger *slog.Logger
	// Feed, if set, is the scheduler snapshot feed plans read; its owner runs it. New
	// starts one when this is nil.
	Feed *feed.Feed
	// Caches is the process's cache registry (docs/store.md, "Shared cache"), read by the
	// agents' routes, the API's task group watches, the scheduler's feed and the
	// controllers, with the controllers' indexes declared (controller.RegisterCaches).
	// New requires it.
	Caches *cache.Registry
	// ControllerMetrics, when set, are the controllers' and the scheduler's metrics,
	// served on the server's /metrics.
	ControllerMetrics *controller.Metrics
	// VolumeController, when set, makes the claims' CSI controller calls instead of the
	// server's agent client (tests).
	VolumeController volumes.VolumeController
	// Placement is the cluster-wide scoring strategy, scheduler.Spread (default) or
	// scheduler.Binpack; an application's berth.io/placement annotation overrides it.
	Placement string
	// BCSClusterID, when set, is the only BCS-ClusterID header BCS's API accepts
	// (docs/compat.md); empty accepts any.
	BCSClusterID string
	// PackagesDir, when set, is served read-only at /packages/ (a package repository for
	// process uris, as BCS had one; `berth dev` serves the demo's package this way).
	PackagesDir string
	// CA is the cluster CA. New requires it.
	CA *pki.CA
	// TLSCertFile and TLSKeyFile are the operator's serving certificate and key (read again
	// when they change); without them the cluster CA issues the server's certificate for
	// TLSSANs, the listen address, the host name and loopback, renewed before it expires.
	TLSCertFile, TLSKeyFile string
	TLSSANs                 []string
	// CertLifetime is how long the certificates the server issues are valid (default
	// pki.CertLifetime); each is renewed two thirds into it.
	CertLifetime time.Duration
	// AuditLog receives audited requests (nil: none); its owner closes it.
	AuditLog *audit.Log
	// MaxConnections bounds the API's open connections (0: the file descriptor limit
	// less a reserve for the server's own files; connlimit.go).
	MaxConnections int
	// MaxConnectionsPerSource bounds the connections of one source address (0: half of
	// MaxConnections), so that one client cannot take every connection.
	MaxConnectionsPerSource int
	// APISeats are the requests of agents, other servers and users the API serves at once,
	// and how long the others wait in their class's queue (fairness.go; zero fields:
	// the defaults).
	APISeats APISeats
	// bodyGrace replaces the time a slow body has before its minimum rate applies
	// (tests; selfprotect.go).
	bodyGrace time.Duration
	// NodeTTL is how long an agent may stay silent before its node is Lost (default 10 s).
	NodeTTL time.Duration
	// MaxHeartbeatsPerSecond bounds the heartbeats of the whole cluster: agents are told
	// to beat less often as nodes join (docs/agent.md, Heartbeats). 0: 500; negative: no
	// bound.
	MaxHeartbeatsPerSecond float64
	// ID names this server in the leader election (GET /v1/cluster).
	ID string
	// AllowSubMinuteSchedules admits cronjobs and cronworkflows whose schedule fires
	// more than once a minute (`@every 2s`): fast test schedules (docs/cron.md).
	AllowSubMinuteSchedules bool
	// ArtifactDir holds the embedded artifact repository (internal/artifacts); empty:
	// none, and artifacts must name an artifactrepository.
	ArtifactDir string
	// ArtifactAllowPrivateEndpoints lets artifactrepository endpoints be loopback,
	// link-local or private addresses (refused by default: a namespace's user must not
	// make the server talk to etcd or an agent).
	ArtifactAllowPrivateEndpoints bool
	// ArtifactGCInterval is the pause between artifact collection rounds (0: 30 s).
	ArtifactGCInterval time.Duration
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
	if c.MaxConnections <= 0 {
		c.MaxConnections = defaultMaxConnections()
	}
	if c.MaxConnectionsPerSource <= 0 {
		c.MaxConnectionsPerSource = max(c.MaxConnections/2, 1)
	}
	return c
}
