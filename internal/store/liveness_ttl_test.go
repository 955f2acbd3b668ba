package store

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// grantedTTL is the TTL etcd granted the lease of node's alive key (0: no key).
func grantedTTL(t *testing.T, node string) time.Duration {
	t.Helper()
	ctx := context.Background()
	resp, err := testStore.client.Get(ctx, aliveKey(node))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return 0
	}
	ttl, err := testStore.client.TimeToLive(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(ttl.GrantedTTL) * time.Second
}

// A node's TTL changes by moving its alive key to a new lease: the key stays (the node
// never stops being alive, its create revision is kept), a longer TTL is always taken, a
// shorter one only when asked to shrink, and the TTL it has costs no write. Another
// server that takes the node's beats learns the lease's TTL.
func TestSetLeaseTTL(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	if _, err := testStore.Beat(ctx, "n1", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	created := func() int64 {
		resp, err := testStore.client.Get(ctx, aliveKey("n1"))
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("alive key: %v %v", resp, err)
		}
		return resp.Kvs[0].CreateRevision
	}
	first := created()
	before := revision(t)
	for _, shrink := range []bool{false, true} {
		if err := testStore.SetLeaseTTL(ctx, "n1", 10*time.Second, 10*time.Second, shrink); err != nil {
			t.Fatal(err)
		}
	}
	if after := revision(t); after != before {
		t.Fatalf("the TTL the lease has moved the revision from %d to %d", before, after)
	}
	for _, c := range []struct {
		lo, hi time.Duration
		shrink bool
		want   time.Duration
	}{
		{13 * time.Second, 25 * time.Second, false, 25 * time.Second}, // under the range: its top
		{31 * time.Second, 31 * time.Second, false, 31 * time.Second},
		{10 * time.Second, 10 * time.Second, false, 31 * time.Second}, // not yet: the agent may beat slowly
		{13 * time.Second, 31 * time.Second, true, 31 * time.Second},  // within the range: stays
		{10 * time.Second, 10 * time.Second, true, 10 * time.Second},
		{13 * time.Second, 13 * time.Second, true, 13 * time.Second},
	} {
		if err := testStore.SetLeaseTTL(ctx, "n1", c.lo, c.hi, c.shrink); err != nil {
			t.Fatal(err)
		}
		if got := grantedTTL(t, "n1"); got != c.want {
			t.Fatalf("set %s to %s (shrink %v): the lease's ttl is %s, want %s", c.lo, c.hi, c.shrink, got, c.want)
		}
		if ttl, ok := testStore.LeaseTTL("n1"); !ok || ttl != c.want {
			t.Fatalf("set %s to %s: the server knows %s %v, want %s", c.lo, c.hi, ttl, ok, c.want)
		}
		if created() != first {
			t.Fatal("the alive key was created again: the node was not alive for a moment")
		}
	}
	testStore.alive.forget("n1") // as another server sees it
	if fresh, err := testStore.Beat(ctx, "n1", 10*time.Second); err != nil || fresh {
		t.Fatalf("beat through another server: fresh %v, %v", fresh, err)
	}
	if ttl, ok := testStore.LeaseTTL("n1"); !ok || ttl != 13*time.Second {
		t.Fatalf("another server knows the lease's ttl as %s %v, want 13s", ttl, ok)
	}
	// A lease this server does not know is left alone.
	if err := testStore.SetLeaseTTL(ctx, "n2", 31*time.Second, 31*time.Second, true); err != nil {
		t.Fatal(err)
	}
	if got := grantedTTL(t, "n2"); got != 0 {
		t.Fatalf("a node that never beat has a lease of %s", got)
	}
}

// ambiguousKV applies every transaction and then answers an error, as a call whose
// deadline passed after etcd applied it.
type ambiguousKV struct{ clientv3.KV }

func (k ambiguousKV) Txn(ctx context.Context) clientv3.Txn { return ambiguousTxn{k.KV.Txn(ctx)} }

type ambiguousTxn struct{ clientv3.Txn }

func (t ambiguousTxn) If(cs ...clientv3.Cmp) clientv3.Txn { return ambiguousTxn{t.Txn.If(cs...)} }
func (t ambiguousTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	return ambiguousTxn{t.Txn.Then(ops...)}
}
func (t ambiguousTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	return ambiguousTxn{t.Txn.Else(ops...)}
}
func (t ambiguousTxn) Commit() (*clientv3.TxnResponse, error) {
	if _, err := t.Txn.Commit(); err != nil {
		return nil, err
	}
	return nil, context.DeadlineExceeded
}

// A move of the key whose outcome is unknown (an error after etcd may have applied it)
// revokes neither lease: either may hold the node's alive key, and revoking it would
// make the node Lost. The node's next beat finds the key again.
func TestSetLeaseTTLUnknownOutcomeKeepsTheKey(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	if _, err := testStore.Beat(ctx, "n1", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	kv := testStore.client.KV
	testStore.client.KV = ambiguousKV{kv}
	err := testStore.SetLeaseTTL(ctx, "n1", 20*time.Second, 20*time.Second, false)
	testStore.client.KV = kv
	if err == nil {
		t.Fatal("no error from a move whose outcome is unknown")
	}
	if got := grantedTTL(t, "n1"); got != 20*time.Second {
		t.Fatalf("the alive key's lease has a TTL of %s after the move, want 20s (0: the key is gone)", got)
	}
	if fresh, err := testStore.Beat(ctx, "n1", 10*time.Second); err != nil || fresh {
		t.Fatalf("the next beat: fresh %v, %v; want the key found", fresh, err)
	}
	if got, ok := testStore.LeaseTTL("n1"); !ok || got != 20*time.Second {
		t.Fatalf("after the next beat the server knows a TTL of %s (%v), want 20s", got, ok)
	}
}
