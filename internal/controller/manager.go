package controller

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store"
)

// electionPrefix is where servers campaign for leadership (etcd election).
const electionPrefix = "/berth/v1/leader"

// Manager runs the controllers on the server elected leader. Every server runs a
// Manager; the one that wins the etcd election runs the loops until it loses its session
// (its lease expired, for instance when partitioned), then campaigns again.
type Manager struct {
	store *store.Store
	feed  *feed.Feed
	opts  Options
	log   *slog.Logger
	id    string
	ttl   int // session TTL in seconds

	mu     sync.Mutex
	leader bool
}

// NewManager builds a manager; id names this server in the election (host:pid by default).
func NewManager(st *store.Store, f *feed.Feed, opts Options, id string) *Manager {
	if id == "" {
		host, _ := os.Hostname()
		id = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	opts = opts.withDefaults()
	return &Manager{store: st, feed: f, opts: opts, log: opts.Logger, id: id, ttl: 10}
}

// Leader reports whether this server currently runs the controllers.
func (m *Manager) Leader() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leader
}

func (m *Manager) setLeader(v bool) {
	m.mu.Lock()
	m.leader = v
	m.mu.Unlock()
}

// Run campaigns and leads until ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := m.term(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("leadership term ended", "err", err)
			sleep(ctx, time.Second)
		}
	}
	return nil
}

// term is one campaign and, if won, one term of leadership.
func (m *Manager) term(ctx context.Context) error {
	// The lease is granted with ctx, so a server shutting down while etcd has no quorum
	// does not wait for the grant; the session's own context outlives ctx, so that Close
	// still revokes the lease (within the TTL) and another server takes over at once.
	lease, err := m.store.Client().Grant(ctx, int64(m.ttl))
	if err != nil {
		return fmt.Errorf("election lease: %w", err)
	}
	sess, err := concurrency.NewSession(m.store.Client(), concurrency.WithLease(lease.ID), concurrency.WithTTL(m.ttl),
		concurrency.WithContext(context.WithoutCancel(ctx)))
	if err != nil {
		return fmt.Errorf("election session: %w", err)
	}
	defer sess.Close()
	el := concurrency.NewElection(sess, electionPrefix)
	if err := el.Campaign(ctx, m.id); err != nil {
		return fmt.Errorf("campaign: %w", err)
	}
	m.log.Info("elected leader; running controllers", "id", m.id)
	m.setLeader(true)
	defer m.setLeader(false)
	lead, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // the term ends when the session's lease is lost
		select {
		case <-sess.Done():
			cancel()
		case <-lead.Done():
		}
	}()
	err = m.runControllers(lead)
	resignCtx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer rcancel()
	_ = el.Resign(resignCtx) // let another server take over at once
	if ctx.Err() == nil && sess.Ctx().Err() != nil {
		return fmt.Errorf("lost the election session")
	}
	return err
}

// runner is one controller loop; it returns when ctx ends.
type runner interface {
	Run(ctx context.Context) error
}

// controllers builds a fresh set of controllers for one term of leadership, so no state
// of an earlier term (remembered events, timers) carries over.
func (m *Manager) controllers(opts Options) map[string]runner {
	return map[string]runner{
		"application":    NewAppController(m.store, m.feed, opts),
		"daemonset":      NewDaemonsetController(m.store, m.feed, opts),
		"deployment":     NewDeploymentController(m.store, opts),
		"node-lifecycle": NewNodeLifecycle(m.store, opts),
		"dependency":     NewDependencyController(m.store, m.feed, opts),
		"notify":         NewNotifyController(m.store, opts),
		"drain":          NewDrainController(m.store, m.feed, opts),
		"service":        NewServiceController(m.store, opts),
		"remote-check":   NewRemoteCheckController(m.store, opts),
		"volume":         NewVolumeController(m.store, opts),
		"job":            NewJobController(m.store, m.feed, opts),
		"workflow":       NewWorkflowController(m.store, m.feed, opts),
		"cron":           NewCronController(m.store, opts),
	}
}

// runControllers runs every controller until ctx ends; when one fails, the term ends so
// that a server in a bad state gives leadership up instead of leading half-blind.
func (m *Manager) runControllers(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	// The process declared the controllers' indexes before its caches ran: a cache
	// started without one fails the term here rather than answering lists with nothing.
	if err := RegisterCaches(m.opts.Caches); err != nil {
		return fmt.Errorf("controllers' caches: %w", err)
	}
	// Before any controller places: the budgets and holds of every kind (plan_state.go).
	if err := restoreOwners(ctx, m.feed, m.opts.Caches, scheduler.Options{Strategy: m.opts.Placement, Cluster: m.opts.Cluster}); err != nil {
		return err
	}
	for name, c := range m.controllers(m.opts) {
		wg.Go(func() {
			err := c.Run(ctx)
			if err != nil && ctx.Err() == nil {
				errOnce.Do(func() { firstErr = fmt.Errorf("%s controller: %w", name, err) })
				cancel()
			}
		})
	}
	wg.Wait()
	return firstErr
}
