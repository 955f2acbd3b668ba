package controller

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestFailureDelayDoublesToFiveMinutes(t *testing.T) {
	for _, tt := range []struct {
		failures int
		want     time.Duration
	}{
		{1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {9, 256 * time.Second},
		{10, 5 * time.Minute}, {11, 5 * time.Minute}, {1000, 5 * time.Minute},
	} {
		if got := failureDelay(tt.failures); got != tt.want {
			t.Errorf("failureDelay(%d) = %s, want %s", tt.failures, got, tt.want)
		}
	}
}

// dueIn is how long until key is due in q (false: not queued).
func dueIn[K comparable](q *queue[K], key K) (time.Duration, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	it, ok := q.index[key]
	if !ok {
		return 0, false
	}
	return time.Until(it.at), true
}

// forgetKey drops a waiting key, so the next settle's due time can be read alone.
func forgetKey[K comparable](q *queue[K], key K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if it, ok := q.index[key]; ok {
		if it.ready {
			heap.Remove(&q.ready, it.pos)
		} else {
			heap.Remove(&q.due, it.pos)
		}
		delete(q.index, key)
	}
}

// TestWorkerSettle checks where each outcome puts a key: back off on failures and panics
// (with a Warning event once it persists), retry a lost race at once a few times, and
// forget the failures on success.
func TestWorkerSettle(t *testing.T) {
	storetest.Reset(t, testStore)
	q := newQueue[nodeName]()
	w := &worker[nodeName]{queue: q, log: storetest.QuietLogger(), rec: newRecorder(testStore, storetest.QuietLogger()),
		about: aboutNode, failures: map[nodeName]int{}}
	key := nodeName("n1")
	broken := errors.New("etcd said no")
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
		w.settle(key, 0, broken)
		got, ok := dueIn(q, key)
		if !ok || got > want || got < want-time.Second {
			t.Fatalf("failure %d: due in %s (queued %v), want about %s", i+1, got, ok, want)
		}
		forgetKey(q, key)
	}
	warnings := func(reason string) int {
		storetest.FlushEvents(t, testStore)
		evs, err := testStore.ListEvents(context.Background(), v4.EventFilter{Kind: v4.KindNode, Name: "n1"})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range evs {
			if e.Reason == reason && e.Type == v4.EventWarning {
				n++
			}
		}
		return n
	}
	if n := warnings("ReconcileFailed"); n != 1 {
		t.Fatalf("%d ReconcileFailed events after 4 failures of one error, want 1", n)
	}
	w.settle(key, 30*time.Second, nil) // success: failures forgotten, its own delay kept
	if got, _ := dueIn(q, key); got < 29*time.Second || w.failures[key] != 0 {
		t.Fatalf("after success: due in %s, failures %d", got, w.failures[key])
	}
	forgetKey(q, key)

	conflict := fmt.Errorf("update: %w", store.ErrConflict)
	for i := range conflictRetries {
		w.settle(key, 0, conflict)
		if got, ok := dueIn(q, key); !ok || got > 0 {
			t.Fatalf("conflict %d: due in %s, want at once", i+1, got)
		}
		forgetKey(q, key)
	}
	w.settle(key, 0, conflict)
	if got, _ := dueIn(q, key); got <= 0 {
		t.Fatalf("conflict %d in a row retried at once; it must back off", conflictRetries+1)
	}
	forgetKey(q, key)

	w.settle(key, 0, &panicError{value: "boom"}) // a panic is reported at once
	if n := warnings("ReconcilePanic"); n != 1 {
		t.Fatalf("%d ReconcilePanic events, want 1", n)
	}
}

// runDrainWorkers runs n workers of the loop "drain" over q until stop, which returns
// once the loop has (the test's end stops it too).
func runDrainWorkers(t *testing.T, m *Metrics, n int, q *queue[nodeName],
	reconcile func(context.Context, nodeName) (time.Duration, error)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		work(ctx, "drain", m, n, q, storetest.QuietLogger(), newRecorder(testStore, storetest.QuietLogger()), aboutNode, reconcile)
	}()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// TestWorkerSurvivesPanics runs the worker loop with one key whose reconcile panics:
// the loop goes on with the other keys.
func TestWorkerSurvivesPanics(t *testing.T) {
	storetest.Reset(t, testStore)
	q := newQueue[nodeName]()
	good := make(chan struct{}, 100)
	reconcile := func(_ context.Context, k nodeName) (time.Duration, error) {
		if k == "bad" {
			var m map[string]int
			m["x"]++ // a nil map write: a real runtime panic
		}
		good <- struct{}{}
		return 0, nil
	}
	m := NewMetrics()
	stop := runDrainWorkers(t, m, 1, q, reconcile)
	q.Add("bad")
	for i := range 3 {
		time.Sleep(10 * time.Millisecond) // let "bad" run first
		q.Add(nodeName(fmt.Sprint("good-", i)))
		select {
		case <-good:
		case <-time.After(10 * time.Second):
			t.Fatalf("key good-%d not reconciled after another key panicked", i)
		}
	}
	if d, ok := dueIn(q, "bad"); !ok || d <= 0 {
		t.Fatalf("the panicking key is due in %s (queued %v), want backed off", d, ok)
	}
	stop()
	// The reconciles were counted: the panic as an error, the three others as ok; the
	// backed-off key is what waits in the queue.
	if ok, failed := testutil.ToFloat64(m.reconciles.WithLabelValues("drain", "ok")), testutil.ToFloat64(m.reconciles.WithLabelValues("drain", "error")); ok != 3 || failed != 1 {
		t.Errorf("reconciles: %g ok, %g errors; want 3 and 1", ok, failed)
	}
	if n := testutil.CollectAndCount(m.reconcileDuration); n != 1 {
		t.Errorf("%d reconcile duration series, want 1 (drain)", n)
	}
	if depth := testutil.ToFloat64(m.queueDepth.WithLabelValues("drain")); depth != 1 {
		t.Errorf("queue depth %g, want 1 (the backed-off key)", depth)
	}
}

// TestWorkersShareTheQueue runs four workers: they reconcile different keys at once,
// never one key twice at once, and every key added is reconciled.
func TestWorkersShareTheQueue(t *testing.T) {
	storetest.Reset(t, testStore)
	q := newQueue[nodeName]()
	var (
		mu                 sync.Mutex
		inFlight           = map[nodeName]bool{}
		most, twice, total int
		seen               = map[nodeName]int{}
	)
	reconcile := func(_ context.Context, k nodeName) (time.Duration, error) {
		mu.Lock()
		if inFlight[k] {
			twice++
		}
		inFlight[k] = true
		most = max(most, len(inFlight))
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // waiting for etcd, say
		mu.Lock()
		delete(inFlight, k)
		seen[k]++
		total++
		mu.Unlock()
		return 0, nil
	}
	stop := runDrainWorkers(t, nil, 4, q, reconcile)
	for i := range 40 {
		k := nodeName(fmt.Sprint("n", i%10))
		q.Add(k) // each key again and again, while it may be in flight
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == 10 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // re-adds of keys in flight run after them
	stop()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 10 || twice != 0 || most < 2 {
		t.Fatalf("keys reconciled %d of 10, one key twice at once %d times, at most %d at once (want 2 or more)", len(seen), twice, most)
	}
}
