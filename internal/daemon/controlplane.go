package daemon

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	v4 "github.com/berthhq/berth/api/v4"

	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
	"github.com/berthhq/berth/internal/volumes"
)

// Defaults of the controllers' settings, for the flags that set them.
const (
	DefaultNodeTTL      = controller.DefaultNodeTTL
	DefaultDependencyGC = controller.DefaultDependencyGC
)

// DefaultServiceCIDR is the default range of the services' virtual IPs.
var DefaultServiceCIDR = controller.DefaultServiceCIDR

// controlPlane is what a server runs beside its API: one registry of caches that the
// agents' routes, the controllers and the scheduler's feed share (one etcd watch per
// kind), the feed, and the controllers, which run on the leader only (every server
// campaigns in an etcd election).
type controlPlane struct {
	caches  *cache.Registry
	feed    *feed.Feed
	metrics *controller.Metrics
	// volumeCalls reach the agents for the volume controller once the server exists
	// (it owns the agent client): set by the server's start.
	volumeCalls *lateVolumeCalls
	// resourceSteps performs workflows' resource steps through the server's admission
	// once the server exists: set by the server's start.
	resourceSteps *lateResourceSteps
	// stop cancels all of it and waits for it.
	stop func()
}

// startControlPlane starts the caches, the feed and the leader's manager; they live until
// stop, which a server calls on every return.
func startControlPlane(ctx context.Context, st *store.Store, cfg ServerConfig) (*controlPlane, error) {
	log := cfg.API.Logger
	ctx, cancel := context.WithCancel(ctx)
	cp := &controlPlane{caches: cache.NewRegistry(st, log), metrics: controller.NewMetrics(), volumeCalls: &lateVolumeCalls{},
		resourceSteps: &lateResourceSteps{}}
	cp.feed = feed.New(cp.caches, log)
	if err := controller.RegisterCaches(cp.caches); err != nil {
		cancel()
		return nil, err
	}
	cp.caches.Start(ctx)
	feedDone := make(chan struct{})
	go func() {
		defer close(feedDone)
		if err := cp.feed.Run(ctx); err != nil {
			log.Error("scheduler feed stopped", "err", err)
		}
	}()
	mgr := controller.NewManager(st, cp.feed, controller.Options{
		Placement: cfg.API.Placement, Cluster: cfg.Cluster, Logger: log,
		NodeTTL: cfg.API.NodeTTL, DependencyGC: cfg.DependencyGC, Caches: cp.caches,
		ServiceCIDR: cfg.ServiceCIDR, Metrics: cp.metrics, Volumes: cp.volumeCalls,
		WorkflowsPerNamespace: cfg.WorkflowsPerNamespace, ResourceSteps: cp.resourceSteps,
		WorkflowArchive: cfg.WorkflowArchive,
	}, cfg.API.ID)
	mgrDone := make(chan struct{})
	go func() { defer close(mgrDone); mgr.Run(ctx) }()
	cp.stop = func() {
		cancel()
		select {
		case <-mgrDone:
		case <-time.After(shutdownGrace):
			// Without etcd quorum the election library's resign waits on the client
			// (concurrency.Election.Campaign resigns with the client's context); closing
			// the store ends that wait. The server's own Close of the store is then a
			// no-op.
			log.Warn("the leader election did not stop in time (no etcd quorum?); closing the store")
			if err := st.Close(); err != nil {
				log.Warn("closing the store to end the leader election failed", "err", err)
			}
			<-mgrDone
		}
		<-feedDone
		cp.caches.Wait()
	}
	return cp, nil
}

// lateVolumeCalls passes the volume controller's CSI calls to the server's, which is
// built after the controllers start; a call before fails and is retried with backoff.
type lateVolumeCalls struct {
	to atomic.Pointer[volumes.VolumeController]
}

func (l *lateVolumeCalls) set(c volumes.VolumeController) { l.to.Store(&c) }

func (l *lateVolumeCalls) Call(ctx context.Context, node string, req v4.CSIControllerRequest) (v4.CSIControllerReply, error) {
	c := l.to.Load()
	if c == nil {
		return v4.CSIControllerReply{}, errors.New("the server is not serving yet")
	}
	return (*c).Call(ctx, node, req)
}

// lateResourceSteps passes the workflow controller's resource steps to the server,
// built after the controllers start; a step before waits for a later pass.
type lateResourceSteps struct {
	to atomic.Pointer[controller.ResourceSteps]
}

func (l *lateResourceSteps) set(r controller.ResourceSteps) { l.to.Store(&r) }

func (l *lateResourceSteps) DoResourceStep(ctx context.Context, step controller.ResourceStep) (controller.ResourceResult, error) {
	r := l.to.Load()
	if r == nil {
		return controller.ResourceResult{}, controller.ErrResourceStepsNotReady
	}
	return (*r).DoResourceStep(ctx, step)
}
