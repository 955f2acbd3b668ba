package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
)

// NodeLifecycle declares nodes Lost when their agents stay silent past the TTL, and their
// task groups Lost with them; the application controller then reschedules per
// restartPolicy (Always reschedules Lost, OnFailure does not).
//
// A node is silent when its liveness lease expired (the store's Beat: heartbeats renew
// an etcd lease and write nothing) and its stored lastHeartbeat is older than the TTL
// too (a node that just registered, or one whose beats go through a server of an earlier
// version, which writes lastHeartbeat instead). The write is conditional on the node
// still having no lease, so a beat that arrives in between wins.
//
// BCS marked a task group Lost only after 720 s without a report, checked every 1200 s;
// berth looks every quarter TTL. A leader that has just been elected waits one TTL before
// it declares any loss: the heartbeats it reads may have been written while no server led
// (or while this one was partitioned), and every live agent heartbeats within a TTL.
//
// A Lost node's agent may still run its pods (a partition). When it reconnects, the
// heartbeat makes the node Ready again; the agent then stops the pods whose task groups
// were replaced (deleted from the store) and reports the others, which turns them from
// Lost back to Running.
type NodeLifecycle struct {
	store *store.Store
	ttl   time.Duration
	log   *slog.Logger
	*recorder
	// nodes is the term's cache of nodes, and tgs the shared cache of task groups (by
	// node): a look reads them instead of listing and decoding every node (and, after a
	// loss, every task group) from etcd. Run runs nodes, and tgs when it is the
	// controller's own (ownTaskGroups: it runs alone, without Options.TaskGroups).
	nodes         *cache.Cache
	tgs           *cache.Cache
	ownTaskGroups bool

	// handled remembers, per node, the heartbeat time of the loss already acted on, so
	// the task groups of a Lost node are scanned once per loss, not on every look.
	handled map[string]time.Time
}

// NewNodeLifecycle builds the controller; Run drives it.
func NewNodeLifecycle(st *store.Store, opts Options) *NodeLifecycle {
	opts = opts.withDefaults()
	log := opts.Logger.With("controller", "node-lifecycle")
	c := &NodeLifecycle{store: st, ttl: opts.NodeTTL, log: log, recorder: newRecorder(st, log), handled: map[string]time.Time{},
		nodes: cache.New(st, cache.Config{Kind: v4.KindNode, Logger: log}), tgs: opts.TaskGroups}
	if c.tgs == nil {
		c.tgs, c.ownTaskGroups = NewTaskGroupCache(st, log, nil), true
	}
	return c
}

// runCaches runs the controller's own caches until ctx ends.
func (c *NodeLifecycle) runCaches(ctx context.Context, wg *sync.WaitGroup) {
	wg.Go(func() { c.nodes.Run(ctx) })
	if c.ownTaskGroups {
		wg.Go(func() { c.tgs.Run(ctx) })
	}
}

// Run checks the nodes every quarter TTL until ctx ends.
func (c *NodeLifecycle) Run(ctx context.Context) error {
	termStart := time.Now()
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: the caches end with ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.runCaches(ctx, &wg)
	t := time.NewTicker(max(c.ttl/4, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			if now.Sub(termStart) < c.ttl {
				continue // grace after the election
			}
			if err := c.check(ctx, now); err != nil && ctx.Err() == nil {
				c.log.Warn("node check failed", "err", err)
			}
		}
	}
}

// check marks silent nodes Lost and the task groups of Lost nodes Lost.
func (c *NodeLifecycle) check(ctx context.Context, now time.Time) error {
	alive, rev, err := c.store.AliveNodesAt(ctx)
	if err != nil {
		return err
	}
	// The nodes as of the liveness read, or later: a cache behind it could show a node
	// that registered meanwhile without its first beat.
	if err := waitForCache(ctx, c.nodes, rev); err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	nodes, _, err := c.nodes.List("", "")
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	var lost []*v4.Node
	for _, o := range nodes {
		cp := *o.(*v4.Node) // the cached node is shared: markLost writes a copy
		n := &cp
		switch {
		case n.Status.Phase == v4.NodeLost:
		case !alive[n.Metadata.Name] && now.Sub(n.Status.LastHeartbeat) > c.ttl:
			if err := c.markLost(ctx, n, now); err != nil {
				return err
			}
		default:
			delete(c.handled, n.Metadata.Name)
			continue
		}
		if n.Status.Phase == v4.NodeLost && !c.handled[n.Metadata.Name].Equal(n.Status.LastHeartbeat) {
			lost = append(lost, n)
		}
	}
	if len(lost) == 0 {
		return nil
	}
	return c.loseTaskGroups(ctx, lost, rev, now)
}

// waitForCache waits, for at most a TTL-independent few seconds, until c reflects rev.
func waitForCache(ctx context.Context, c *cache.Cache, rev int64) error {
	ctx, cancel := context.WithTimeout(ctx, catchUpTimeout)
	defer cancel()
	return c.WaitFor(ctx, rev)
}

// markLost writes the node Lost unless a heartbeat got in first (the write is
// conditional on the version read, and on the node still having no lease).
func (c *NodeLifecycle) markLost(ctx context.Context, n *v4.Node, now time.Time) error {
	n.Status.Phase = v4.NodeLost
	err := c.store.UpdateUnlessAlive(ctx, n)
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		n.Status.Phase = "" // it changed meanwhile: look again next time
		return nil
	}
	if err != nil {
		return fmt.Errorf("mark node %s lost: %w", n.Metadata.Name, err)
	}
	msg := fmt.Sprintf("node %s is lost: no heartbeat within the ttl (%s)", n.Metadata.Name, c.ttl)
	if n.Status.LastHeartbeat.IsZero() {
		msg = fmt.Sprintf("node %s is lost: its agent never sent a heartbeat (ttl %s)", n.Metadata.Name, c.ttl)
	}
	c.log.Warn("node lost", "node", n.Metadata.Name, "ttl", c.ttl)
	c.record(v4.Event{Type: v4.EventWarning, Reason: "NodeLost", Kind: v4.KindNode, Name: n.Metadata.Name, Message: msg})
	return nil
}

// loseTaskGroups marks every live task group bound to a lost node Lost.
func (c *NodeLifecycle) loseTaskGroups(ctx context.Context, lost []*v4.Node, rev int64, now time.Time) error {
	byName := map[string]*v4.Node{}
	for _, n := range lost {
		byName[n.Metadata.Name] = n
	}
	tgs, err := c.taskGroupsOn(ctx, lost, rev)
	if err != nil {
		return err
	}
	for _, tg := range tgs {
		n, ok := byName[tg.Spec.Node]
		if !ok || v4.Terminal(tg.Status.Phase) || tg.Status.Phase == v4.StatusLost {
			continue
		}
		if err := c.loseTaskGroup(ctx, tg, n, now); err != nil {
			return err
		}
	}
	for _, n := range lost {
		c.handled[n.Metadata.Name] = n.Status.LastHeartbeat
	}
	return nil
}

// taskGroupsOn returns the task groups bound to the nodes from the shared cache, by node,
// as of revision rev or later (a write conditional on a version older than the stored one
// would fail, and the task group stay as it is). They are copies, to be written.
func (c *NodeLifecycle) taskGroupsOn(ctx context.Context, nodes []*v4.Node, rev int64) ([]*v4.TaskGroup, error) {
	var out []*v4.TaskGroup
	if err := waitForCache(ctx, c.tgs, rev); err != nil {
		return nil, fmt.Errorf("task groups: %w", err)
	}
	for _, n := range nodes {
		objs, _, err := c.tgs.List(IndexNode, n.Metadata.Name)
		if err != nil {
			return nil, fmt.Errorf("task groups of node %s: %w", n.Metadata.Name, err)
		}
		for _, o := range objs {
			cp := *o.(*v4.TaskGroup)
			cp.Status.Tasks = slices.Clone(cp.Status.Tasks) // loseTaskGroup sets their status
			out = append(out, &cp)
		}
	}
	return out, nil
}

// loseTaskGroup writes one task group Lost, conditional on the version read: a report
// that arrived meanwhile (the agent is back) wins.
func (c *NodeLifecycle) loseTaskGroup(ctx context.Context, tg *v4.TaskGroup, n *v4.Node, now time.Time) error {
	st := &tg.Status
	st.Phase = v4.StatusLost
	st.Message = fmt.Sprintf("node %s is lost (no heartbeat within the ttl of %s)", n.Metadata.Name, c.ttl)
	st.Updated = now.UTC()
	for i := range st.Tasks {
		if !v4.Terminal(st.Tasks[i].Status) {
			st.Tasks[i].Status = v4.StatusLost
		}
	}
	err := c.store.Update(ctx, tg, store.Raw{})
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mark task group %s lost: %w", tg.Metadata.Name, err)
	}
	c.log.Info("task group lost with its node", "taskgroup", tg.Metadata.Name, "node", n.Metadata.Name)
	return nil
}
