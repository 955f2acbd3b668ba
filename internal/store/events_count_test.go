package store

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// countingKV notes the reads a store sends to etcd: Gets, and the ranges inside
// transactions.
type countingKV struct {
	clientv3.KV
	mu        sync.Mutex
	gets      []string // keys of Gets (and of Do with a range)
	txnRanges []string // keys of the prefix ranges inside transactions
}

func (k *countingKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	k.mu.Lock()
	k.gets = append(k.gets, key)
	k.mu.Unlock()
	return k.KV.Get(ctx, key, opts...)
}

func (k *countingKV) Do(ctx context.Context, op clientv3.Op) (clientv3.OpResponse, error) {
	if op.IsGet() {
		k.mu.Lock()
		k.gets = append(k.gets, string(op.KeyBytes()))
		k.mu.Unlock()
	}
	return k.KV.Do(ctx, op)
}

func (k *countingKV) Txn(ctx context.Context) clientv3.Txn {
	return &countingTxn{Txn: k.KV.Txn(ctx), kv: k}
}

// reads returns what was read since the last call, and starts over.
func (k *countingKV) reads() (gets, txnRanges []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	gets, txnRanges = k.gets, k.txnRanges
	k.gets, k.txnRanges = nil, nil
	return gets, txnRanges
}

type countingTxn struct {
	clientv3.Txn
	kv *countingKV
}

func (t *countingTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.Txn = t.Txn.If(cs...)
	return t
}

func (t *countingTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.note(ops)
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *countingTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.note(ops)
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *countingTxn) note(ops []clientv3.Op) {
	t.kv.mu.Lock()
	defer t.kv.mu.Unlock()
	for _, op := range ops {
		if op.IsGet() && len(op.RangeBytes()) > 0 {
			t.kv.txnRanges = append(t.kv.txnRanges, string(op.KeyBytes()))
		}
	}
}

// countingStore is a store on the test store's etcd whose reads are noted, with event
// bookkeeping of its own: another server of the same cluster.
func countingStore(t testing.TB) (*Store, *countingKV) {
	t.Helper()
	kv := &countingKV{KV: testStore.client.KV}
	c := clientv3.NewCtxClient(context.Background())
	t.Cleanup(func() { c.Close() })
	c.KV, c.Lease = kv, testStore.client.Lease
	return &Store{client: c, etcd: testStore.etcd, log: quietLogger()}, kv
}

// burstEvents is n distinct events in namespace ns, five per object.
func burstEvents(ns string, n int) []v4.Event {
	evs := make([]v4.Event, n)
	for i := range evs {
		evs[i] = v4.Event{Reason: "InstanceRunning", Kind: v4.KindProcess, Namespace: ns,
			Name: fmt.Sprint("web-", i/5), TaskGroup: fmt.Sprintf("%d.web.%s", i, ns), Message: fmt.Sprint("instance ", i, " is Running")}
	}
	return evs
}

// A burst far below the bounds is counted in memory: once the store has counted the
// namespaces and the cluster, it reads no index of a namespace or of the cluster, and the
// only ranges it asks for are each new record's count of its object (inside the write).
func TestEventBoundsReadNothingFarFromBounds(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	s, kv := countingStore(t)
	namespaces := []string{"quiet-a", "quiet-b"}
	for _, ns := range namespaces { // the first record of a namespace counts it
		if err := s.RecordEvent(ctx, v4.Event{Reason: "Started", Namespace: ns, Name: "first"}); err != nil {
			t.Fatal(err)
		}
	}
	if gets, _ := kv.reads(); len(gets) == 0 {
		t.Fatal("the first records counted nothing: the test no longer sees the store's reads")
	}
	const n = 2 * eventBatch
	for _, ns := range namespaces {
		if err := s.RecordEvents(ctx, burstEvents(ns, n)); err != nil {
			t.Fatal(err)
		}
	}
	gets, ranges := kv.reads()
	if len(gets) != 0 {
		t.Fatalf("%d new records read %d times: %q", 2*n, len(gets), gets)
	}
	for _, key := range ranges {
		if rest, ok := strings.CutPrefix(key, eventIndexPrefix); !ok || strings.Count(rest, "/") != 2 || !strings.HasSuffix(rest, "/") {
			t.Fatalf("a write read the range %q: want only objects' (%s{ns}/{obj}/)", key, eventIndexPrefix)
		}
	}
	if len(ranges) != 2*n {
		t.Fatalf("%d new records read %d objects' counts, want one each", 2*n, len(ranges))
	}
	if logKeys, _ := eventKeyCount(t); logKeys != 2*n+2 {
		t.Fatalf("%d records, want %d", logKeys, 2*n+2)
	}
}

// Records deleted behind a store's back (their lease expired) leave its count high: that
// makes it count again early, and trim nothing it should keep.
func TestEventBoundsRecountAfterExpiry(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	s, kv := countingStore(t)
	s.events.limits = eventLimits{perObject: 1000, perNamespace: 100, total: 10_000, totalSlack: 1}
	if err := s.RecordEvents(ctx, burstEvents("expire", 100)); err != nil {
		t.Fatal(err)
	}
	if _, err := testStore.Client().Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	kv.reads()
	if err := s.RecordEvents(ctx, burstEvents("expire", 150)[100:]); err != nil {
		t.Fatal(err)
	}
	if gets, _ := kv.reads(); len(gets) == 0 {
		t.Fatal("a namespace past its bound by this store's count was not counted")
	}
	if logKeys, _ := eventKeyCount(t); logKeys != 50 {
		t.Fatalf("%d records, want the 50 new ones", logKeys)
	}
}

// Servers count their own new records: others' are seen at a count, which each makes
// after a tenth of the bound of its own. A namespace written by two servers in turn thus
// stays within its bound, its slack and a tenth of the bound (events_count.go).
func TestEventBoundsTwoServers(t *testing.T) {
	resetStore(t)
	ctx := context.Background()
	lim := eventLimits{perObject: 1000, perNamespace: 100, total: 10_000, totalSlack: 1}
	var servers []*Store
	for range 2 {
		s, _ := countingStore(t)
		s.events.limits = lim
		servers = append(servers, s)
	}
	most := lim.perNamespace + max(lim.perNamespace/100, 1) - 1 + lim.perNamespace/trimSlack
	evs := burstEvents("shared", 600)
	for i, e := range evs {
		if err := servers[i%2].RecordEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
		if logKeys, _ := eventKeyCount(t); logKeys > int64(most) {
			t.Fatalf("after %d records: %d kept, want at most %d", i+1, logKeys, most)
		}
	}
	got, err := testStore.ListEvents(ctx, v4.EventFilter{Namespace: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < lim.perNamespace*9/10 || got[len(got)-1].Message != evs[len(evs)-1].Message {
		t.Fatalf("kept %d records, the last %q; want the most recent, at least %d", len(got), got[len(got)-1].Message, lim.perNamespace*9/10)
	}
}
