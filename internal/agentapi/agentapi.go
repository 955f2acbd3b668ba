// Package agentapi is the agent protocol of berth's API server (docs/agent.md): the
// /v1/agent/... routes node agents call with their node's certificate — certificates and
// their renewal, registration, heartbeats and heartbeat streams, the task groups of a
// node, status reports (batched), events, busy ports, the configmaps and secrets a
// node's task groups use, claims of CSI volumes, and the service catalog — with the
// state only they keep. The API server (internal/server) builds it from what it was
// handed and mounts its routes on its own mux (Routes).
package agentapi

import (
	"context"
	"errors"
	"log/slog"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/pki"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
	"github.com/berthhq/berth/internal/volumes"
)

// Config is what the agent protocol is handed by the server that mounts it.
type Config struct {
	// Store is the cluster's store (its owner closes it).
	Store *store.Store
	// Caches is the process's cache registry: the task groups, with the index by node
	// (controller.RegisterCaches declares it), and the catalog kinds.
	Caches *cache.Registry
	// Logger receives errors.
	Logger *slog.Logger
	// Bodies reads the requests' bodies within the server's limits.
	Bodies httpapi.Bodies
	// Streams ends every stream when the server closes them.
	Streams context.Context
	// CA signs the node certificates, valid for CertLifetime.
	CA           *pki.CA
	CertLifetime time.Duration
	// NodeTTL is how long a node stays alive after a heartbeat at the floor interval.
	NodeTTL time.Duration
	// MaxBeatsPerSecond bounds the heartbeats of the whole cluster (pace.go; 0:
	// DefaultMaxBeatsPerSecond, negative: no bound, every agent at the floor).
	MaxBeatsPerSecond float64
	// VolumeController makes the claims' ControllerPublish and Unpublish calls through
	// the agent of the node hosting the plugin's controller (volumes.go).
	VolumeController volumes.VolumeController
}

// API serves the agent protocol. Create it with New and stop it with Close.
type API struct {
	store        *store.Store
	log          *slog.Logger
	bodies       httpapi.Bodies
	streams      context.Context
	ca           *pki.CA
	certLifetime time.Duration
	// nodeTTL is how long a node stays alive after a heartbeat; beats caches what the
	// heartbeats wrote (beats.go).
	nodeTTL time.Duration
	beats   beatCache
	// minBeatGap is MinBeatGap (0 in benchmarks).
	minBeatGap time.Duration
	// pace gives each agent its interval from the cluster's node count, read from the
	// shared node cache (pace.go).
	pace      Pace
	nodeCache *cache.Cache
	// beatStreams is each node's live heartbeat stream (beatstreams.go).
	beatStreams beatStreams
	// taskGroupCache is the shared cache of task groups that agents list and watch (by
	// node) without one etcd watch each (taskgroups.go).
	taskGroupCache *cache.Cache
	// catalog are the shared caches of the kinds every agent follows (catalogKinds).
	catalog map[v4.Kind]*cache.Cache
	// statuses batches the agents' status writes (status_batch.go); stopStatuses ends it and the
	// sweep of silent heartbeat streams (beatstreams.go).
	statuses     *statusBatcher
	stopStatuses func()
	// calls make the claims' controller calls (Config.VolumeController).
	calls volumes.VolumeController
}

// catalogKinds are the kinds every agent follows whole (docs/services.md): its DNS
// server and service proxy answer for every service of the cluster.
var catalogKinds = []v4.Kind{v4.KindService, v4.KindEndpoint}

// New builds the agent protocol over what cfg hands it and starts its status batcher,
// which Close stops.
func New(cfg Config) (*API, error) {
	if cfg.Caches == nil {
		return nil, errors.New("no cache registry")
	}
	tgs, err := cfg.Caches.ForIndexed(v4.KindTaskGroup, controller.IndexNode)
	if err != nil {
		return nil, err
	}
	a := &API{store: cfg.Store, log: cfg.Logger, bodies: cfg.Bodies, streams: cfg.Streams, ca: cfg.CA,
		certLifetime: cfg.CertLifetime, nodeTTL: cfg.NodeTTL, taskGroupCache: tgs, minBeatGap: MinBeatGap,
		catalog: map[v4.Kind]*cache.Cache{}, calls: cfg.VolumeController}
	maxBeats := cfg.MaxBeatsPerSecond
	if maxBeats == 0 {
		maxBeats = DefaultMaxBeatsPerSecond
	}
	if a.calls == nil {
		a.calls = noVolumeCalls{}
	}
	a.pace, a.nodeCache = defaultPace(max(0, maxBeats), cfg.NodeTTL), cfg.Caches.For(v4.KindNode)
	for _, k := range catalogKinds {
		a.catalog[k] = cfg.Caches.For(k)
	}
	a.statuses = newStatusBatcher(a.store, a.taskGroupCache, a.log)
	ctx, stop := context.WithCancel(context.Background())
	go a.statuses.run(ctx)
	swept := make(chan struct{})
	go func() { defer close(swept); a.beatStreams.sweepUntil(ctx) }()
	a.stopStatuses = func() { stop(); <-a.statuses.stopped; <-swept }
	return a, nil
}

// Close stops the status batcher (writes still coming are written alone) and the sweep
// of silent heartbeat streams. Close may be called several times.
func (a *API) Close() { a.stopStatuses() }

// ForgetNode forgets what the heartbeats of node wrote (the server deleted the node), so
// its next beat reads it again.
func (a *API) ForgetNode(node string) { a.beats.forget(node) }

// LiveBeatStreams is the number of open heartbeat streams (one a node at most).
func (a *API) LiveBeatStreams() int { return a.beatStreams.count() }

func (a *API) nodes() store.TypedStore[*v4.Node] {
	return store.Typed[*v4.Node](a.store, v4.KindNode)
}

// update validates node n and writes it with its resourceVersion as the precondition.
func (a *API) update(ctx context.Context, n *v4.Node) error {
	return httpapi.Update(ctx, a.store, n)
}
