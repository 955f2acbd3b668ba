package controller

import (
	"log/slog"
	"net/netip"
	"time"

	"github.com/berthhq/berth/internal/store/cache"
	"github.com/berthhq/berth/internal/volumes"
)

// Options configure the controllers the leader runs.
type Options struct {
	Placement string // cluster-wide scheduler strategy
	Cluster   string // cluster part of task group IDs
	Logger    *slog.Logger
	// NodeTTL is how long a node's agent may stay silent before the node is Lost
	// (default 10 s). A new leader waits one TTL before it declares any loss.
	NodeTTL time.Duration
	// DependencyGC is how long a dependency pod without dependents is kept (default
	// 5 minutes); no pod is collected in the first DependencyGC of a leader's term.
	DependencyGC time.Duration
	// MoveDeadline is how long a move's replacement may take to become ready (Running,
	// and healthy with health checks) before the move fails and the replacement is
	// stopped (default 5 minutes), so a drain is never stuck on a replacement that never
	// gets healthy.
	MoveDeadline time.Duration
	// ServiceCIDR is the range services' virtual IPs come from (default
	// DefaultServiceCIDR).
	ServiceCIDR netip.Prefix
	// HealthTimeUnit is the length of one second of a remote health check's settings
	// (interval, timeout, grace): 1 s by default; tests scale it down.
	HealthTimeUnit time.Duration
	// StartGrace is how long a new instance has to become ready before a service that
	// selects it and has no ready instance warns NoEndpoints, when its health checks do
	// not give it longer (default DefaultStartGrace).
	StartGrace time.Duration
	// Caches is the process's cache registry, which every controller reads its kinds
	// from (docs/store.md, "Shared cache"); RegisterCaches declared the controllers'
	// indexes on it before it started. Required.
	Caches *cache.Registry
	// Metrics, when set, records placements and reconciles (NewMetrics).
	Metrics *Metrics
	// Volumes makes the volume controller's CSI controller calls through the agents
	// (the server's agent client); without it every call fails and volumes wait.
	Volumes volumes.VolumeController
	// WorkflowsPerNamespace bounds the workflows running at once in one namespace
	// (0: no bound); the others wait Pending, in no particular order.
	WorkflowsPerNamespace int
	// WorkflowArchive says when finished workflows move into the archive, and how long
	// they are kept there (zero: none is archived).
	WorkflowArchive WorkflowArchive
	// ResourceSteps performs the resource steps of workflows with their submitters'
	// rights (the server's admission chain); without it such steps fail.
	ResourceSteps ResourceSteps
}

// Defaults for Options.
const (
	DefaultNodeTTL      = 10 * time.Second
	DefaultDependencyGC = 5 * time.Minute
	DefaultMoveDeadline = 5 * time.Minute
)

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.NodeTTL <= 0 {
		o.NodeTTL = DefaultNodeTTL
	}
	if o.DependencyGC <= 0 {
		o.DependencyGC = DefaultDependencyGC
	}
	if o.MoveDeadline <= 0 {
		o.MoveDeadline = DefaultMoveDeadline
	}
	if o.StartGrace <= 0 {
		o.StartGrace = DefaultStartGrace
	}
	if o.HealthTimeUnit <= 0 {
		o.HealthTimeUnit = time.Second
	}
	return o
}
