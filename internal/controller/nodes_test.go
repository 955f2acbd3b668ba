package controller

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
	"github.com/berthhq/berth/internal/store/storetest"
)

// heartbeat sets a node's last heartbeat as the server's heartbeat handler does.
func (e *env) heartbeat(name string, at time.Time) {
	e.t.Helper()
	o, err := testStore.Get(context.Background(), v4.KindNode, "", name)
	if err != nil {
		e.t.Fatal(err)
	}
	n := o.(*v4.Node)
	n.Status.Phase, n.Status.LastHeartbeat = v4.NodeReady, at
	if err := testStore.Update(context.Background(), n, store.Raw{}); err != nil {
		e.t.Fatal(err)
	}
}

// nodeLifecycle is a node lifecycle controller whose checks the test calls, over the
// env's caches.
func (e *env) nodeLifecycle(ttl time.Duration) *NodeLifecycle {
	e.t.Helper()
	opts := e.opts()
	opts.NodeTTL = ttl
	return NewNodeLifecycle(testStore, opts)
}

// check runs one look of the node lifecycle once its caches hold every node and task
// group as stored (the test's writes just before).
func (e *env) check(nl *NodeLifecycle, now time.Time) error {
	e.t.Helper()
	same := func(c *cache.Cache, kind v4.Kind) bool {
		stored, _, err := testStore.List(e.ctx, kind, "")
		if err != nil {
			e.t.Fatal(err)
		}
		cached, _, _ := c.List("", "")
		if len(cached) != len(stored) {
			return false
		}
		for _, o := range stored {
			m := o.GetMeta()
			got, ok := c.Get(m.Namespace, m.Name)
			if !ok || got.GetMeta().ResourceVersion != m.ResourceVersion {
				return false
			}
		}
		return true
	}
	e.eventually("the node lifecycle's caches hold the store", func() bool {
		return same(nl.nodes, v4.KindNode) && same(nl.tgs, v4.KindTaskGroup)
	})
	// The alive nodes as the controller reads them when it runs: a view that follows
	// etcd's alive keys, once it holds them all.
	ctx, cancel := context.WithCancel(e.ctx)
	e.t.Cleanup(cancel)
	view := testStore.FollowAlive(ctx)
	e.eventually("the alive view holds etcd's alive keys", func() bool {
		want, err := testStore.AliveNodes(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		same := false
		view.Read(func(alive map[string]bool) { same = maps.Equal(alive, want) })
		return same
	})
	return nl.check(e.ctx, now, view)
}

func (e *env) nodePhase(name string) string {
	e.t.Helper()
	o, err := testStore.Get(context.Background(), v4.KindNode, "", name)
	if err != nil {
		e.t.Fatal(err)
	}
	return o.(*v4.Node).Status.Phase
}

// Heartbeats renew the node's lease and leave lastHeartbeat as it was: a node whose
// lease lives is not lost however old its lastHeartbeat, and is once the lease is gone.
func TestLiveLeaseKeepsNodeReady(t *testing.T) {
	e := newEnv(t, "node-l")
	now := time.Now()
	e.heartbeat("node-l", now.Add(-time.Hour))
	if _, err := testStore.Beat(e.ctx, "node-l", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	nl := e.nodeLifecycle(10 * time.Second)
	if err := e.check(nl, now); err != nil {
		t.Fatal(err)
	}
	if got := e.nodePhase("node-l"); got != v4.NodeReady {
		t.Fatalf("a node with a live lease: phase %q, want Ready", got)
	}
	if err := testStore.ForgetNode(e.ctx, "node-l"); err != nil {
		t.Fatal(err)
	}
	if err := e.check(nl, now); err != nil {
		t.Fatal(err)
	}
	if got := e.nodePhase("node-l"); got != v4.NodeLost {
		t.Fatalf("a node whose lease is gone: phase %q, want Lost", got)
	}
}

func TestSilentNodeIsLostWithItsTaskGroups(t *testing.T) {
	e := newEnv(t, "node-a", "node-b")
	now := time.Now()
	e.heartbeat("node-a", now)
	e.heartbeat("node-b", now)
	e.apply("always", 2, `{"policy":"Always"}`)
	e.apply("onfail", 2, `{"policy":"OnFailure"}`)
	e.eventually("4 task groups", func() bool { return len(e.taskGroups("always"))+len(e.taskGroups("onfail")) == 4 })
	onA := map[string]string{} // task group -> owner, for those on node-a
	for _, owner := range []string{"always", "onfail"} {
		for _, tg := range e.taskGroups(owner) {
			e.report(tg, v4.StatusRunning, now, time.Time{})
			if tg.Spec.Node == "node-a" {
				onA[tg.Metadata.Name] = owner
			}
		}
	}
	if len(onA) != 2 {
		t.Fatalf("spread placement must put one instance of each on node-a, got %v", onA)
	}

	nl := e.nodeLifecycle(10 * time.Second)
	e.heartbeat("node-a", now.Add(-11*time.Second))
	if err := e.check(nl, now); err != nil {
		t.Fatal(err)
	}
	if got := e.nodePhase("node-a"); got != v4.NodeLost {
		t.Fatalf("node-a silent 11 s with ttl 10 s: phase %q, want Lost", got)
	}
	if got := e.nodePhase("node-b"); got != v4.NodeReady {
		t.Fatalf("node-b heartbeats: phase %q, want Ready", got)
	}
	storetest.FlushEvents(t, testStore)
	evs, err := testStore.ListEvents(e.ctx, v4.EventFilter{Kind: v4.KindNode, Name: "node-a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Reason != "NodeLost" || !strings.Contains(evs[0].Message, "no heartbeat within the ttl (10s)") {
		t.Fatalf("events of node-a: %+v", evs)
	}

	// Always replaces its lost instance on node-b; OnFailure leaves it Lost.
	e.eventually("the Always instance replaced on node-b", func() bool {
		for _, tg := range e.taskGroups("always") {
			if tg.Spec.Node == "node-a" {
				return false
			}
		}
		return len(e.taskGroups("always")) == 2
	})
	for _, tg := range e.taskGroups("onfail") {
		if _, ok := onA[tg.Metadata.Name]; ok {
			if tg.Status.Phase != v4.StatusLost || !strings.Contains(tg.Status.Message, "node node-a is lost") {
				t.Fatalf("OnFailure instance on the lost node: phase %q message %q", tg.Status.Phase, tg.Status.Message)
			}
			continue
		}
		if tg.Status.Phase != v4.StatusRunning {
			t.Fatalf("instance %s on node-b: phase %q, want Running", tg.Metadata.Name, tg.Status.Phase)
		}
	}
	e.eventually("onfail Abnormal with a lost instance", func() bool { return e.status("onfail").Phase == v4.AppAbnormal })

	// The agent comes back: its heartbeat makes the node Ready, its report the instance Running.
	e.heartbeat("node-a", time.Now())
	if err := e.check(nl, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, tg := range e.taskGroups("onfail") {
		if _, ok := onA[tg.Metadata.Name]; ok {
			e.report(tg, v4.StatusRunning, now, time.Time{})
		}
	}
	e.eventually("onfail Running again", func() bool { return e.status("onfail").Phase == v4.AppRunning })
	if got := e.nodePhase("node-a"); got != v4.NodeReady {
		t.Fatalf("node-a after its heartbeat: %q", got)
	}
}

func TestNewLeaderWaitsOneTTLBeforeDeclaringLoss(t *testing.T) {
	e := newEnv(t, "node-a")
	e.heartbeat("node-a", time.Now().Add(-time.Hour)) // stale: written before this term
	opts := e.opts()
	opts.NodeTTL = 2 * time.Second
	nl := NewNodeLifecycle(testStore, opts)
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan struct{})
	go func() { nl.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	time.Sleep(time.Second) // half the grace: quarter-TTL ticks have run
	if got := e.nodePhase("node-a"); got != v4.NodeReady {
		t.Fatalf("inside the grace period: phase %q, want Ready", got)
	}
	e.eventually("node-a Lost after the grace", func() bool { return e.nodePhase("node-a") == v4.NodeLost })
}

// A node lost with a lease this server granted is said lost after its lease's TTL (which
// follows its heartbeat interval), not the base TTL.
func TestNodeLostNamesItsLeasesTTL(t *testing.T) {
	e := newEnv(t, "node-t")
	now := time.Now()
	e.heartbeat("node-t", now.Add(-time.Hour))
	if _, err := testStore.Beat(e.ctx, "node-t", 47*time.Second); err != nil {
		t.Fatal(err)
	}
	// The lease ends as if the node went silent for its TTL.
	leases, err := testStore.Client().Leases(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	revoked := 0
	for _, l := range leases.Leases {
		if ttl, err := testStore.Client().TimeToLive(e.ctx, l.ID); err == nil && ttl.GrantedTTL == 47 {
			if _, err := testStore.Client().Revoke(e.ctx, l.ID); err != nil {
				t.Fatal(err)
			}
			revoked++
		}
	}
	if revoked != 1 {
		t.Fatalf("%d leases of 47 s, want the node's one", revoked)
	}
	if err := e.check(e.nodeLifecycle(10*time.Second), now); err != nil {
		t.Fatal(err)
	}
	if got := e.nodePhase("node-t"); got != v4.NodeLost {
		t.Fatalf("a node whose lease ended: phase %q, want Lost", got)
	}
	if evs := e.nodeEvents("node-t"); len(evs) != 1 || !strings.Contains(evs[0], "no heartbeat within its lease's ttl (47s)") {
		t.Fatalf("events of node-t: %q", evs)
	}
}
