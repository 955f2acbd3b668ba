package store

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/berthhq/berth/internal/pki"
)

// readyTimeout bounds how long the embedded member may take to become ready.
const readyTimeout = 60 * time.Second

// startEmbedded runs a single-member etcd on loopback with its data in dataDir/etcd, over
// TLS with certificates of ca (etcdtls.go).
// etcd refuses port 0, so free ports are found by listening on :0 and closing; another
// process may grab them in between, so a bind failure is retried with new ports. The
// ports change on every start: nothing outside the process uses them (a member of a
// cluster has stable ones, see member.go).
func startEmbedded(ctx context.Context, dataDir string, quota int64, ca *pki.CA, log *slog.Logger, zl *zap.Logger) (*embed.Etcd, *etcdTLS, error) {
	// Loopback alone: the certificate is the same whatever the ports.
	mt, err := newEtcdTLS(dataDir, ca, nil, log)
	if err != nil {
		return nil, nil, err
	}
	var lastErr error
	for attempt := range 5 {
		if attempt > 0 {
			log.Debug("retrying embedded etcd start", "attempt", attempt, "err", lastErr)
		}
		e, err := tryStartEmbedded(ctx, dataDir, quota, mt, zl)
		if err == nil {
			return e, mt, nil
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			return nil, nil, err
		}
	}
	return nil, nil, lastErr
}

func tryStartEmbedded(ctx context.Context, dataDir string, quota int64, mt *etcdTLS, zl *zap.Logger) (*embed.Etcd, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	clientURL := url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", ports[0])}
	peerURL := url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	cfg := embedConfig(dataDir, "berth", quota, clientURL, peerURL, zl)
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	mt.apply(cfg)
	return runEmbedded(ctx, cfg)
}

// The raft log an embedded member keeps in memory (embedConfig).
const (
	embeddedSnapshotCount  = 500
	embeddedCatchUpEntries = 250
)

// embedConfig is the configuration every embedded member shares.
func embedConfig(dataDir, name string, quota int64, clientURL, peerURL url.URL, zl *zap.Logger) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = name
	cfg.Dir = filepath.Join(dataDir, "etcd")
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.LogLevel = "warn"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zl)
	cfg.MaxRequestBytes = maxRequestBytes
	// Apply writes every document of a stream in one transaction (two puts each).
	cfg.MaxTxnOps = 4096
	cfg.QuotaBackendBytes = quota
	// etcd keeps every raft entry since its last snapshot in memory, plus the catch-up
	// entries it keeps after one: with its defaults (10,000 and 5,000) a flood of 100 KB
	// objects holds 1.5 GB. These keep at most about 750 entries (docs/operations.md,
	// Memory); a follower further behind gets a snapshot of the database instead.
	cfg.SnapshotCount = embeddedSnapshotCount
	cfg.SnapshotCatchUpEntries = embeddedCatchUpEntries
	// No etcd auto-compaction: the store's compactor (compact.go) compacts embedded and
	// external etcd alike, once per interval across the servers.
	return cfg
}

// runEmbedded starts etcd and waits until it serves (for a learner: until it has caught
// up enough to publish itself).
func runEmbedded(ctx context.Context, cfg *embed.Config) (*embed.Etcd, error) {
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start embedded etcd in %s: %w", cfg.Dir, err)
	}
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd failed: %w", err)
	case <-e.Server.StopNotify():
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s stopped while starting (see its log above)", cfg.Dir)
	case <-timer.C:
		e.Close()
		return nil, fmt.Errorf("embedded etcd not ready after %s (are the other members reachable?)", readyTimeout)
	case <-ctx.Done():
		e.Close()
		return nil, fmt.Errorf("start embedded etcd: %w", ctx.Err())
	}
}

// freePorts asks the kernel for n distinct free loopback ports.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
