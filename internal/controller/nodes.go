package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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
	// nodes and tgs are the shared caches of nodes and task groups (by node): a look
	// reads them instead of listing and decoding every node (and, after a loss, every
	// task group) from etcd.
	nodes, tgs *cache.Cache
}

// NewNodeLifecycle builds the controller; Run drives it.
func NewNodeLifecycle(st *store.Store, opts Options) *NodeLifecycle {
	opts = opts.withDefaults()
	log := opts.Logger.With("controller", "node-lifecycle")
	return &NodeLifecycle{store: st, ttl: opts.NodeTTL, log: log, recorder: newRecorder(st, log),
		nodes: opts.Caches.For(v4.KindNode), tgs: opts.Caches.For(v4.KindTaskGroup)}
}

// Run checks the nodes every quarter TTL until ctx ends.
func (c *NodeLifecycle) Run(ctx context.Context) error {
	termStart := time.Now()
	alive := c.store.FollowAlive(ctx)
	return loop{caches: []*cache.Cache{c.nodes, c.tgs}, work: func(ctx context.Context) { c.look(ctx, termStart, alive) }}.run(ctx)
}

// look checks the nodes every quarter TTL until ctx ends, from a TTL after termStart.
func (c *NodeLifecycle) look(ctx context.Context, termStart time.Time, alive *store.AliveView) {
	t := time.NewTicker(max(c.ttl/4, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if now.Sub(termStart) < c.ttl {
				continue // grace after the election
			}
			if err := c.check(ctx, now, alive); err != nil && ctx.Err() == nil {
				c.log.Warn("node check failed", "err", err)
			}
		}
	}
}

// check marks silent nodes Lost and the task groups of Lost nodes Lost. It reads the
// caches as they are: a node or task group a moment behind is written conditionally on
// the version read, so a stale one fails the write and is looked at again next time
// (a lost node's task groups are looked up by node at every look: an index lookup).
// The alive nodes come from view (nil, or not synced yet: listed from etcd).
func (c *NodeLifecycle) check(ctx context.Context, now time.Time, view *store.AliveView) error {
	nodes, _, err := c.nodes.List("", "")
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	var silent []*v4.Node
	pick := func(alive map[string]bool) {
		for _, o := range nodes {
			n := o.(*v4.Node)
			if n.Status.Phase == v4.NodeLost || (!alive[n.Metadata.Name] && now.Sub(n.Status.LastHeartbeat) > c.ttl) {
				silent = append(silent, n)
			}
		}
	}
	if view == nil || !view.Read(pick) {
		alive, err := c.store.AliveNodes(ctx)
		if err != nil {
			return err
		}
		pick(alive)
	}
	var lost []*v4.Node
	for _, n := range silent {
		if n.Status.Phase != v4.NodeLost {
			cp := *n // the cached node is shared: markLost writes a copy
			n = &cp
			if err := c.markLost(ctx, n, now); err != nil {
				return err
			}
		}
		if n.Status.Phase == v4.NodeLost {
			lost = append(lost, n)
		}
	}
	if len(lost) == 0 {
		return nil
	}
	return c.loseTaskGroups(ctx, lost, now)
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
	// The TTL that ran out: the node's lease's, which follows the heartbeat interval its
	// agent was given (docs/agent.md), when this server granted or renewed it; else the
	// base TTL, which the stored lastHeartbeat is judged by.
	ttl, what := c.ttl, "the ttl"
	if leased, ok := c.store.LeaseTTL(n.Metadata.Name); ok {
		ttl, what = leased, "its lease's ttl"
	}
	msg := fmt.Sprintf("node %s is lost: no heartbeat within %s (%s)", n.Metadata.Name, what, ttl)
	if n.Status.LastHeartbeat.IsZero() {
		msg = fmt.Sprintf("node %s is lost: its agent never sent a heartbeat (ttl %s)", n.Metadata.Name, ttl)
	}
	c.log.Warn("node lost", "node", n.Metadata.Name, "ttl", ttl)
	c.record(v4.Event{Type: v4.EventWarning, Reason: "NodeLost", Kind: v4.KindNode, Name: n.Metadata.Name, Message: msg})
	return nil
}

// loseTaskGroups marks every live task group bound to a lost node Lost.
func (c *NodeLifecycle) loseTaskGroups(ctx context.Context, lost []*v4.Node, now time.Time) error {
	for _, n := range lost {
		objs, _, err := c.tgs.List(IndexNode, n.Metadata.Name)
		if err != nil {
			return fmt.Errorf("task groups of node %s: %w", n.Metadata.Name, err)
		}
		for _, o := range objs {
			cached := o.(*v4.TaskGroup)
			if v4.Terminal(cached.Status.Phase) || cached.Status.Phase == v4.StatusLost {
				continue
			}
			tg := *cached // shared: write a copy
			tg.Status.Tasks = slices.Clone(tg.Status.Tasks)
			if err := c.loseTaskGroup(ctx, &tg, n, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// loseTaskGroup writes one task group Lost, conditional on the version read: a report
// that arrived meanwhile (the agent is back) wins.
func (c *NodeLifecycle) loseTaskGroup(ctx context.Context, tg *v4.TaskGroup, n *v4.Node, now time.Time) error {
	st := &tg.Status
	if st.Phase != v4.StatusLost {
		st.LastPhase = st.Phase
	}
	st.Phase = v4.StatusLost
	st.Message = fmt.Sprintf("node %s is lost (no heartbeat within the ttl of %s)", n.Metadata.Name, c.ttl)
	st.Updated = now.UTC()
	for i := range st.Tasks {
		if !v4.Terminal(st.Tasks[i].Status) {
			st.Tasks[i].LastStatus, st.Tasks[i].Status = st.Tasks[i].Status, v4.StatusLost
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
