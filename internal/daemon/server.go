// Package daemon assembles berth's processes — `berth server`, `berth agent` and
// `berth dev` — from the packages that do the work: it opens the store, builds the
// process's one cache registry, runs the scheduler's feed and the leader's controllers,
// reads or creates the cluster CA, writes the data dir's bootstrap files, opens the audit
// log and the listeners, and hands all of it to the HTTP API (internal/server) or the node
// agent (internal/agent). It is the one package that knows how a whole process fits
// together (docs/architecture.md); the command line (internal/cli) only fills its
// configs from flags.
package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/server"
	"github.com/berthhq/berth/internal/store"
)

// ServerConfig configures a `berth server` process.
type ServerConfig struct {
	// API configures the HTTP API (its listen address, limits, TLS and the rest);
	// RunServer sets its Caches, Feed, ControllerMetrics, CA, AuditLog and ID.
	API server.Config
	// InsecureListen, when set, also serves the API over plain HTTP on this loopback
	// address (development only; agents cannot use it).
	InsecureListen string
	// DataDir holds the embedded etcd's data (unused with Etcd.Endpoints), the bootstrap
	// files (CAFile, JoinTokenFile, AdminTokenFile), the audit log, the embedded
	// artifact repository (DataDir/artifacts) and, by default, the encryption key file.
	DataDir string
	// EncryptionKeyFile holds the keys that seal secrets at rest (default
	// DataDir/encryption.key, written on the first start or when joining; docs/security.md).
	EncryptionKeyFile string
	// Etcd selects and bounds the store's etcd.
	Etcd EtcdConfig
	// Member, when set, makes the embedded etcd a member of a cluster of servers with
	// stable URLs, joining one with Member.Join (docs/ha.md).
	Member *MemberConfig
	// JoinToken, when set, is a server join token ("berth-<id>.<secret>") the server makes
	// sure the cluster knows: agents and servers can join with it (docs/security.md, Join
	// tokens). Without it, the first start with a data dir creates one.
	JoinToken string
	// AuditLogFile is the audit log (default DataDir/audit.log, "off" for none), rotated
	// past AuditLogMaxBytes keeping AuditLogMaxFiles old files.
	AuditLogFile     string
	AuditLogMaxBytes int64
	AuditLogMaxFiles int
	// Cluster is the cluster part of task group IDs (default "berth").
	Cluster string
	// ServiceCIDR is the range of the services' virtual IPs (default DefaultServiceCIDR).
	ServiceCIDR netip.Prefix
	// DependencyGC is how long an unused dependency pod is kept (default
	// DefaultDependencyGC).
	DependencyGC time.Duration
	// WorkflowsPerNamespace bounds the workflows running at once in one namespace (0:
	// no bound).
	WorkflowsPerNamespace int
	// WorkflowArchive says when finished workflows move into the workflow archive and how
	// long they are kept there (zero: none is archived).
	WorkflowArchive WorkflowArchive
	// OnReady, if set, is called with the bound address once the server accepts
	// connections.
	OnReady func(addr string)
	// OnManagementToken, if set, receives the management token made at the cluster's
	// first start, the one time it is made (`berth server` prints it).
	OnManagementToken func(token string)
}

// EtcdConfig is the store's etcd: the embedded one (no Endpoints) or an external cluster.
type EtcdConfig struct {
	// Endpoints selects an external etcd cluster instead of the embedded one.
	Endpoints []string
	// CAFile, CertFile and KeyFile are the TLS of an external etcd: the CA that verifies
	// it, and the client certificate and key berth presents.
	CAFile, CertFile, KeyFile string
	// QuotaBytes is the embedded etcd's space quota (0: store.DefaultQuotaBytes).
	QuotaBytes int64
	// CompactionInterval is how often etcd's history is compacted (0: never); see
	// store.Config.CompactionInterval.
	CompactionInterval time.Duration
	// EventTTL is how long an event is kept after it was last seen (0: store.DefaultEventTTL).
	EventTTL time.Duration
}

// WorkflowArchive says when finished workflows are archived and how long they are kept
// (docs/workflows.md, "The workflow archive").
type WorkflowArchive = controller.WorkflowArchive

// MemberConfig makes the embedded etcd a member of a cluster of servers (docs/ha.md).
type MemberConfig = store.MemberConfig

// The bounds of EtcdConfig.QuotaBytes, which the store enforces; the CLI checks its flag
// against them before it opens anything.
const (
	MinQuotaBytes = store.MinQuotaBytes
	MaxQuotaBytes = store.MaxQuotaBytes
)

// shutdownGrace bounds how long the leader election may take to stop.
const shutdownGrace = 5 * time.Second

// RunServer runs a `berth server` until ctx is done: it opens the store, starts the
// control plane (caches, feed, the leader's controllers), bootstraps the cluster's CA and
// files, and serves the API; then it stops them in the reverse order and closes the store.
func RunServer(ctx context.Context, cfg ServerConfig) (err error) {
	cfg.API.Logger = cmp.Or(cfg.API.Logger, slog.Default())
	cfg.API.Listen = cmp.Or(cfg.API.Listen, server.DefaultListen)
	log := cfg.API.Logger
	st, err := openStore(ctx, cfg)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("server: %w", cerr)
		}
	}()
	cfg.API.ID = cmp.Or(cfg.API.ID, serverID(st))
	ln, err := net.Listen("tcp", cfg.API.Listen)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w", cfg.API.Listen, err)
	}
	defer ln.Close()
	cp, err := startControlPlane(ctx, st, cfg)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	defer cp.stop()
	cfg.API.Caches, cfg.API.Feed, cfg.API.ControllerMetrics = cp.caches, cp.feed, cp.metrics
	if cfg.API.CA, err = ensureCA(ctx, st, log); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if err := bootstrapFiles(ctx, st, cfg); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if cfg.API.AuditLog, err = openAuditLog(cfg); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if cfg.API.AuditLog != nil {
		defer cfg.API.AuditLog.Close()
	}
	if cfg.API.ArtifactDir == "" && cfg.DataDir != "" {
		cfg.API.ArtifactDir = filepath.Join(cfg.DataDir, "artifacts") // the embedded artifact repository
	}
	srv, err := server.New(cfg.API, st)
	if err != nil {
		return err
	}
	defer srv.Close()
	cp.volumeCalls.set(srv.VolumeController())
	cp.resourceSteps.set(srv)
	return serve(ctx, srv, ln, cfg)
}

// serve opens the plain listener when one is asked for and serves the API until ctx
// ends.
func serve(ctx context.Context, srv *server.Server, ln net.Listener, cfg ServerConfig) error {
	log := cfg.API.Logger
	var plain net.Listener
	if cfg.InsecureListen != "" {
		var err error
		if plain, err = net.Listen("tcp", cfg.InsecureListen); err != nil {
			return fmt.Errorf("server: --insecure-listen %s: %w", cfg.InsecureListen, err)
		}
		log.Warn("serving the API without TLS on loopback (--insecure-listen): for development only", "addr", "http://"+plain.Addr().String())
	}
	addr := ln.Addr().String()
	log.Info("berth server listening", "addr", "https://"+addr, "caHash", cfg.API.CA.Hash())
	if err := srv.AdvertiseArtifacts(ctx, advertised(addr, cfg.API.TLSSANs)); err != nil {
		log.Warn("the other servers cannot fetch this server's artifacts", "err", err)
	}
	if cfg.OnReady != nil {
		cfg.OnReady(addr)
	}
	if err := srv.Serve(ctx, ln, plain); err != nil {
		return err
	}
	log.Info("berth server stopped")
	return nil
}

// advertised is where the other servers reach this one's API: the listen address, or,
// listening on every address, the first --tls-san, else the host name (which the
// server's certificate names).
func advertised(addr string, sans []string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip, perr := netip.ParseAddr(host); perr != nil || !ip.IsUnspecified() {
		return addr
	}
	if len(sans) > 0 {
		return net.JoinHostPort(sans[0], port)
	}
	name, err := os.Hostname()
	if err != nil {
		return addr
	}
	return net.JoinHostPort(name, port)
}

// openStore checks the flags that select the store and opens it.
func openStore(ctx context.Context, cfg ServerConfig) (*store.Store, error) {
	keyFile := cfg.EncryptionKeyFile
	if keyFile == "" {
		if cfg.DataDir == "" {
			return nil, errors.New("give --encryption-key-file (the same file on every server) or --data-dir to keep it in")
		}
		keyFile = filepath.Join(cfg.DataDir, "encryption.key")
	}
	if cfg.InsecureListen != "" {
		if err := checkLoopback(cfg.InsecureListen); err != nil {
			return nil, fmt.Errorf("--insecure-listen: %w", err)
		}
	}
	etcdTLS, err := externalEtcdTLS(cfg.Etcd)
	if err != nil {
		return nil, err
	}
	return store.Open(ctx, store.Config{DataDir: cfg.DataDir, Endpoints: cfg.Etcd.Endpoints, Member: cfg.Member,
		Logger: cfg.API.Logger, QuotaBytes: cfg.Etcd.QuotaBytes, CompactionInterval: cfg.Etcd.CompactionInterval,
		EventTTL: cfg.Etcd.EventTTL, KeyFile: keyFile, EtcdTLS: etcdTLS})
}

// serverID names this server in the leader election: member@host:pid, which server and
// which process of it.
func serverID(st *store.Store) string {
	host, _ := os.Hostname()
	id := fmt.Sprintf("%s:%d", host, os.Getpid())
	if name := st.MemberName(); name != "" {
		id = name + "@" + id
	}
	return id
}
