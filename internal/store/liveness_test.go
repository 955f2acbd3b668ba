package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// revision is etcd's current revision: it moves with every write to the keyspace.
func revision(t *testing.T) int64 {
	t.Helper()
	resp, err := testStore.client.Get(context.Background(), "/none")
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// A heartbeat is a lease renewal: after the first, beats write nothing to the keyspace,
// also when another server (which knows no lease of the node) takes them.
func TestBeatsWriteNothing(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	fresh, err := testStore.Beat(ctx, "n1", 10*time.Second)
	if err != nil || !fresh {
		t.Fatalf("first beat: fresh %v, %v", fresh, err)
	}
	before := revision(t)
	for i := range 20 {
		if i == 10 {
			testStore.alive.forget("n1") // as another server sees it
		}
		fresh, err := testStore.Beat(ctx, "n1", 10*time.Second)
		if err != nil || fresh {
			t.Fatalf("beat %d: fresh %v, %v", i, fresh, err)
		}
	}
	if after := revision(t); after != before {
		t.Fatalf("20 beats moved the revision from %d to %d", before, after)
	}
	alive, err := testStore.AliveNodes(ctx)
	if err != nil || !alive["n1"] || len(alive) != 1 {
		t.Fatalf("alive %v %v", alive, err)
	}
	last, err := testStore.LastBeat(ctx, "n1")
	if err != nil || time.Since(last) > 3*time.Second {
		t.Fatalf("last beat %v %v", last, err)
	}
	if last, err := testStore.LastBeat(ctx, "n2"); err != nil || !last.IsZero() {
		t.Fatalf("a node that never beat: %v %v", last, err)
	}
	if _, err := testStore.Beat(ctx, "a/b", time.Second); err == nil {
		t.Fatal("a node name with a slash was accepted")
	}
}

// A node that stops beating is no longer alive one TTL later; its next beats make it
// alive again, and say so.
func TestBeatsStopAndResume(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	if _, err := testStore.Beat(ctx, "quiet", time.Second); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		alive, err := testStore.AliveNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !alive["quiet"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the node is still alive 15 s after its last beat with a TTL of 1 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The first beat after the expiry queues a renewal, whose round finds the lease gone;
	// the beat after that makes the node alive again.
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		fresh, err := testStore.Beat(ctx, "quiet", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if fresh {
			break
		}
		if time.Now().After(end) {
			t.Fatal("beats after the expiry did not make the node alive again in 5 s")
		}
	}
	if alive, err := testStore.AliveNodes(ctx); err != nil || !alive["quiet"] {
		t.Fatalf("not alive after a fresh beat: %v", err)
	}
}

// Beats that return without waiting for etcd still keep the node alive: the renewal
// rounds renew its lease, long past one TTL.
func TestQueuedRenewalsKeepANodeAlive(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	const ttl = 2 * time.Second
	if fresh, err := testStore.Beat(ctx, "steady", ttl); err != nil || !fresh {
		t.Fatalf("first beat: fresh %v, %v", fresh, err)
	}
	for end := time.Now().Add(3 * ttl); time.Now().Before(end); {
		time.Sleep(300 * time.Millisecond)
		fresh, err := testStore.Beat(ctx, "steady", ttl)
		if err != nil || fresh {
			t.Fatalf("beat: fresh %v, %v", fresh, err)
		}
		if alive, err := testStore.AliveNodes(ctx); err != nil || !alive["steady"] {
			t.Fatalf("a node beating every 300 ms is not alive with a TTL of %s: %v", ttl, err)
		}
	}
	if len(testStore.renewals.take()) > 1 {
		t.Fatal("renewals of one node pile up")
	}
}

// The node lifecycle's write of a lost node fails while the node is alive, and after
// the node changed; it succeeds once the node's liveness is gone.
func TestUpdateUnlessAlive(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	n := testNode("n1")
	if err := testStore.Create(ctx, n, Raw{}); err != nil {
		t.Fatal(err)
	}
	if _, err := testStore.Beat(ctx, "n1", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	stored, err := testStore.Get(ctx, n.Kind, "", "n1")
	if err != nil {
		t.Fatal(err)
	}
	lost := *stored.(*v4.Node)
	lost.Status.Phase = v4.NodeLost
	if err := testStore.UpdateUnlessAlive(ctx, &lost); !errors.Is(err, ErrConflict) {
		t.Fatalf("marked lost while alive: %v", err)
	}
	if err := testStore.ForgetNode(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if alive, _ := testStore.AliveNodes(ctx); alive["n1"] {
		t.Fatal("alive after ForgetNode")
	}
	stale := lost.Metadata.ResourceVersion
	if err := testStore.UpdateUnlessAlive(ctx, &lost); err != nil {
		t.Fatalf("mark lost once silent: %v", err)
	}
	lost.Metadata.ResourceVersion = stale
	if err := testStore.UpdateUnlessAlive(ctx, &lost); !errors.Is(err, ErrConflict) {
		t.Fatalf("a stale version was written: %v", err)
	}
}

// BenchmarkBeat is one heartbeat of a node that is alive: a lease renewal.
func BenchmarkBeat(b *testing.B) {
	ctx := context.Background()
	if _, err := testStore.Beat(ctx, "bench", 10*time.Second); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := testStore.Beat(ctx, "bench", 10*time.Second); err != nil {
			b.Fatal(err)
		}
	}
}

// Many beats at once over the one renewal stream all get their answer: a send that held
// the lock the answers need deadlocked the embedded member's in-process stream.
func TestConcurrentBeats(t *testing.T) {
	resetStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const nodes, beats = 100, 20
	errs := make(chan error, nodes)
	for i := range nodes {
		go func() {
			name := fmt.Sprintf("c%d", i)
			for range beats {
				if _, err := testStore.Beat(ctx, name, 10*time.Second); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range nodes {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// A lease is renewed on the lanes only while it cannot have expired at etcd; a beat skips
// etcd as long as the server read the node's key within aliveRecheck.
func TestKnownLeaseFreshness(t *testing.T) {
	var l liveness
	t0 := time.Now()
	l.remember("n", 7, 4*time.Second, t0)
	for _, c := range []struct {
		at         time.Duration
		fresh, obs bool
	}{
		{0, true, true},
		{3 * time.Second, true, true},
		{4 * time.Second, false, true},
		{aliveRecheck + time.Second, false, false},
	} {
		if got := l.fresh("n", 7, t0.Add(c.at)); got != c.fresh {
			t.Errorf("fresh at %s = %v, want %v", c.at, got, c.fresh)
		}
		if _, got := l.lease("n", t0.Add(c.at)); got != c.obs {
			t.Errorf("beat at %s skips etcd = %v, want %v", c.at, got, c.obs)
		}
	}
	if l.fresh("n", 8, t0) {
		t.Error("another lease of the node counts as fresh")
	}
	l.renewed("n", 7, t0.Add(3*time.Second))
	if !l.fresh("n", 7, t0.Add(6*time.Second)) {
		t.Error("a renewal did not extend the lease")
	}
}
