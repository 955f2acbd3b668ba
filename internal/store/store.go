// Package store is berth's only state store: etcd, embedded (data in the server's data
// directory: a single member, or one member of a cluster of servers, member.go) or
// external. It owns the key layout (docs/store.md) and gives typed access to v4 objects,
// optimistic concurrency on etcd mod revisions, multi-object apply in one transaction,
// watches, and berth's own event records.
package store

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3rpc"
	"go.etcd.io/etcd/server/v3/proxy/grpcproxy/adapter"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/seal"
)

// Config says where the state lives.
type Config struct {
	// DataDir holds the embedded etcd's data (in DataDir/etcd). Unused with Endpoints.
	DataDir string
	// Endpoints of an external etcd cluster; empty means run an embedded single member.
	Endpoints []string
	// Member, with DataDir, makes the embedded etcd a member of a cluster of servers with
	// stable URLs (member.go); nil runs a single member on random loopback ports.
	Member *MemberConfig
	// Logger receives berth's own messages about the store (etcd's are kept at error level).
	Logger *slog.Logger
	// QuotaBytes is the embedded etcd's space quota: past it etcd raises its NOSPACE
	// alarm and refuses writes (space.go). 0 means DefaultQuotaBytes; see CheckQuotaBytes
	// for the range. Unused with Endpoints: an external cluster has its own quota.
	QuotaBytes int64
	// CompactionInterval is how often etcd's history is compacted, to the revision seen
	// one interval earlier, by one of the servers sharing the etcd (compact.go); 0
	// compacts nothing.
	CompactionInterval time.Duration
	// EventTTL is how long an event is kept after it was last seen; 0 means
	// DefaultEventTTL.
	EventTTL time.Duration
	// Keyring seals secrets at rest (sealing.go). Open refuses a keyring that cannot open
	// what the cluster sealed before.
	Keyring *seal.Keyring
	// EtcdTLS is the client TLS of an external etcd (--etcd-cacert, --etcd-cert,
	// --etcd-key); nil connects without TLS. The embedded member always uses TLS.
	EtcdTLS *tls.Config
	// NamespaceLimits are the limits of a namespace an administrator set none for
	// (quota.go); a zero field takes its default: DefaultNamespaceObjects objects, an
	// eighth of the space quota (of etcd's default 2 GiB with Endpoints) in bytes.
	NamespaceLimits NamespaceLimits
	// KeyFile, used when Keyring is nil, is the encryption key file: read when it exists,
	// else written with the keys of the cluster this member joins, or a new key. With
	// neither, secrets are stored in plaintext.
	KeyFile string
}

// Store is a handle on etcd. It is safe for concurrent use.
type Store struct {
	// client is the data path: with the embedded member, calls into it in-process
	// (no TLS, HTTP/2 or protobuf between the store and its own member); with an external
	// cluster, the network client. admin is always the network client: member and
	// maintenance calls name the endpoint of one member, which an in-process client
	// cannot reach.
	client *clientv3.Client
	admin  *clientv3.Client
	etcd   *embed.Etcd   // nil with an external cluster
	tls    *etcdTLS      // the embedded member's certificates; nil with an external cluster
	self   string        // the embedded member's client endpoint; "" with an external cluster
	member *memberRecord // the embedded member's identity; nil unless started with Config.Member
	log    *slog.Logger
	// keyring seals secrets (sealing.go); nil when encryption is off.
	keyring *seal.Keyring
	events  eventState  // records: lease, limits, index cache (events.go)
	engine  engineCache // maintenance mode, read often (engine.go)
	// pcCache is the priority classes admission read last (priorityclass.go).
	pcCache priorityClassCache
	// wfArchive remembers the sort keys of the archive chunks IsArchived read last.
	wfArchive archiveIndex
	alive     liveness // the node leases this server renews (liveness.go)
	renewer   renewers // their renewals, over a few long-lived streams (liveness_renew.go)
	// renewals are the renewals beats asked for, sent in rounds (liveness_batch.go).
	renewals renewQueue
	// closing demotes etcd's shutdown noise (see slogCore).
	closing atomic.Bool
	// space is what the store knows of etcd's space (alarm cache, last defragmentation,
	// last recovery); background runs the compactor and the NOSPACE watch (space.go).
	space      spaceState
	background background
	// eventQueue holds the records QueueEvent hands to the event writer (events_batch.go);
	// droppedEvents counts those it dropped because the queue was full; eventsQueued and
	// eventsDone count those queued and those written, failed or dropped (FlushEvents).
	eventQueue               chan v4.Event
	droppedEvents            atomic.Uint64
	eventsQueued, eventsDone atomic.Uint64
	// similar combines the similar Normal events QueueEvent takes (events_aggregate.go).
	similar *aggregator
	// quota holds the namespaces' default limits and what the store read or wrote of
	// their limits and ledgers (quota.go).
	quota quotaState
	// watches counts the open object watches by kind (watch_count.go).
	watches watchCount
	// floor is the newest revision the embedded member's watches received, below which
	// its serializable reads are asked again (reads.go).
	floor watchFloor
}

// maxRequestBytes bounds one etcd request. An apply of a 2 MiB body writes the objects and
// the raw documents in one transaction, so it must be well above the API's body limit.
const maxRequestBytes = 10 * 1024 * 1024

// Open connects to etcd, starting the embedded member first when cfg.Endpoints is empty.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	log := cmp.Or(cfg.Logger, slog.Default())
	if cfg.CompactionInterval < 0 {
		return nil, fmt.Errorf("open store: %w: compaction interval %s is negative", ErrInvalid, cfg.CompactionInterval)
	}
	s := &Store{log: log, keyring: cfg.Keyring, eventQueue: make(chan v4.Event, eventQueueSize), similar: newAggregator(),
		events: eventState{ttl: cmp.Or(cfg.EventTTL, DefaultEventTTL)}}
	endpoints := cfg.Endpoints
	s.quota.defaults = defaultLimits(cfg.NamespaceLimits, externalQuotaBytes)
	if len(endpoints) == 0 {
		if cfg.DataDir == "" {
			return nil, errors.New("open store: a data directory is required for embedded etcd")
		}
		if cfg.QuotaBytes == 0 {
			cfg.QuotaBytes = DefaultQuotaBytes
		}
		if err := CheckQuotaBytes(cfg.QuotaBytes); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		s.quota.defaults = defaultLimits(cfg.NamespaceLimits, cfg.QuotaBytes)
		e, err := s.startEtcd(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		s.etcd = e
		s.self = "https://" + e.Clients[0].Addr().String()
		endpoints = []string{s.self}
	}
	clientTLS := cfg.EtcdTLS
	if s.tls != nil {
		clientTLS = s.tls.clientConfig()
	}
	client, err := clientv3.New(clientv3.Config{
		TLS:                clientTLS,
		Endpoints:          endpoints,
		DialTimeout:        5 * time.Second,
		MaxCallSendMsgSize: maxRequestBytes + 1024*1024,
		Logger:             newEtcdLogger(log, &s.closing),
		Context:            context.WithoutCancel(ctx),
	})
	if err != nil {
		s.closeEmbedded()
		return nil, fmt.Errorf("open store: connect to etcd %v: %w", endpoints, err)
	}
	s.client, s.admin = client, client
	s.renewer.setLeases(func() pb.LeaseClient { return pb.NewLeaseClient(client.ActiveConnection()) })
	if s.etcd != nil {
		s.client = inProcessClient(s.etcd.Server, &s.floor)
		inProcess := adapter.LeaseServerToLeaseClient(v3rpc.NewQuotaLeaseServer(s.etcd.Server))
		s.renewer.setLeases(func() pb.LeaseClient { return inProcess })
	}
	// Fail fast on an unreachable external cluster instead of at the first request.
	readyCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.Ready(readyCtx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	if s.member != nil {
		if err := s.adoptPeerURL(readyCtx); err != nil {
			s.Close()
			return nil, fmt.Errorf("open store: %w", err)
		}
	}
	if s.keyring == nil && cfg.KeyFile != "" {
		if s.keyring, err = s.loadKeyFile(cfg.KeyFile); err != nil {
			s.Close()
			return nil, fmt.Errorf("open store: %w", err)
		}
	}
	if err := s.checkKeyring(readyCtx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	s.startBackground(cfg.CompactionInterval)
	log.Info("store open", "endpoints", endpoints, "embedded", s.etcd != nil, "compactionInterval", cfg.CompactionInterval)
	return s, nil
}

// startEtcd starts the embedded member: a member of a cluster with its recorded identity
// when cfg.Member is set, else a single member on random ports.
func (s *Store) startEtcd(ctx context.Context, cfg Config) (*embed.Etcd, error) {
	zl := newEtcdLogger(s.log, &s.closing)
	mc := cfg.Member
	if mc == nil {
		// A member of a cluster restarted without its flags is still that member.
		rec, err := loadMember(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			ca, err := loadOrCreateCA(cfg.DataDir, nil, s.log)
			if err != nil {
				return nil, err
			}
			e, mt, err := startEmbedded(ctx, cfg.DataDir, cfg.QuotaBytes, ca, s.log, zl)
			s.tls = mt
			return e, err
		}
		mc = &MemberConfig{}
	}
	rec, err := resolveMember(ctx, cfg.DataDir, *mc)
	if err != nil {
		return nil, err
	}
	s.member = rec
	ca, err := loadOrCreateCA(cfg.DataDir, rec.joined, s.log)
	if err != nil {
		return nil, err
	}
	e, mt, err := startMember(ctx, cfg.DataDir, cfg.QuotaBytes, rec, ca, s.log, zl)
	if err != nil {
		return nil, err
	}
	s.tls = mt
	if err := saveMember(cfg.DataDir, rec); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Client gives direct access to etcd for things the store does not wrap (elections, leases).
func (s *Store) Client() *clientv3.Client { return s.client }

// Endpoints returns the etcd client URLs in use (the embedded member's when embedded).
func (s *Store) Endpoints() []string { return s.admin.Endpoints() }

// Ready performs a quick linearizable read; it fails when etcd has no quorum or is unreachable.
func (s *Store) Ready(ctx context.Context) error {
	// Through the network client: the data path's reads of a sole member read its
	// applied state (reads.go), and being ready means that raft answers.
	if _, err := s.admin.Get(ctx, prefix+"ready", clientv3.WithCountOnly()); err != nil {
		return fmt.Errorf("etcd not ready: %w", wrapEtcd(err))
	}
	return nil
}

// Close closes the client, then stops the embedded member cleanly (its data stays on disk).
// Later calls do nothing and return nil.
func (s *Store) Close() error {
	if s.closing.Swap(true) {
		return nil
	}
	s.background.stop() // before the client closes: they use it
	var err error
	clients := []*clientv3.Client{s.client}
	if s.admin != s.client {
		clients = append(clients, s.admin)
	}
	for _, c := range clients {
		if c == nil {
			continue
		}
		if cerr := c.Close(); cerr != nil && !errors.Is(cerr, context.Canceled) {
			err = fmt.Errorf("close etcd client: %w", cerr)
		}
	}
	s.closeEmbedded()
	return err
}

func (s *Store) closeEmbedded() {
	if s.etcd == nil {
		return
	}
	s.etcd.Close()
	<-s.etcd.Server.StopNotify()
	s.etcd = nil
}
