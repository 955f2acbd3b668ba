package controller

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestQueueDedupAndDelay(t *testing.T) {
	q := newQueue[string]()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now() // before AddAfter: "late" is due 150 ms after it was added
	q.AddAfter("late", 150*time.Millisecond)
	q.Add("a")
	q.Add("a")
	q.AddAfter("a", time.Hour) // an earlier due time wins
	if k, _ := q.Get(ctx); k != "a" {
		t.Fatalf("got %q first", k)
	}
	q.Add("a") // while running: held until Done
	if k, _ := q.Get(ctx); k != "late" || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("got %q after %v, want late after 150ms", k, time.Since(start))
	}
	q.Done("late")
	q.Done("a")
	if k, _ := q.Get(ctx); k != "a" {
		t.Fatalf("re-add during processing lost: %q", k)
	}
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	if _, ok := q.Get(cctx); ok {
		t.Fatal("Get must end with its context")
	}
}

// Keys come out in due order however they went in, an earlier add moves a key forward,
// and a later one does not move it back.
func TestQueueOrder(t *testing.T) {
	q := newQueue[int]()
	base := time.Now().Add(-time.Hour)
	for i := range 200 {
		q.AddAt((i*7919)%200, base.Add(time.Duration((i*7919)%200)*time.Second))
	}
	q.AddAt(150, base.Add(-time.Minute)) // earlier: first
	q.AddAt(0, base.Add(time.Hour))      // later: ignored
	if n := len(q.due); n != 200 {
		t.Fatalf("%d keys wait, want 200", n)
	}
	ctx := context.Background()
	want := append([]int{150}, slices.DeleteFunc(slices.Collect(func(yield func(int) bool) {
		for i := range 200 {
			if !yield(i) {
				return
			}
		}
	}), func(i int) bool { return i == 150 })...)
	for i, w := range want {
		k, ok := q.Get(ctx)
		if !ok || k != w {
			t.Fatalf("key %d: got %d, want %d", i, k, w)
		}
		q.Done(k)
	}
}

// Several workers share a queue while keys are added from other goroutines: no key is
// processed by two workers at once, and every key added is processed after its last add.
func TestQueueWorkersLoseNothing(t *testing.T) {
	q := newQueue[int]()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const keys, adds = 50, 2000
	var mu sync.Mutex
	busy := map[int]bool{}
	lastAdd := map[int]int{}   // key -> sequence of its last add
	processed := map[int]int{} // key -> last add seen done when it was processed
	var seq atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				k, ok := q.Get(ctx)
				if !ok {
					return
				}
				mu.Lock()
				if busy[k] {
					mu.Unlock()
					t.Errorf("key %d handed to two workers", k)
					return
				}
				busy[k] = true
				seen := lastAdd[k]
				mu.Unlock()
				time.Sleep(time.Duration(k%3) * 100 * time.Microsecond)
				mu.Lock()
				busy[k] = false
				processed[k] = max(processed[k], seen)
				mu.Unlock()
				q.Done(k)
			}
		})
	}
	var adders sync.WaitGroup
	for a := range 4 {
		adders.Go(func() {
			for i := range adds / 4 {
				k := (i*31 + a) % keys
				mu.Lock()
				lastAdd[k] = int(seq.Add(1))
				mu.Unlock()
				q.Add(k)
			}
		})
	}
	adders.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		done := true
		for k, s := range lastAdd {
			if processed[k] < s {
				done = false
			}
		}
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("some keys were not processed after their last add")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
}

// Among keys due, the one of highest priority comes first; a key due later waits
// whatever its priority.
func TestQueueHigherPriorityFirst(t *testing.T) {
	q := newQueue[string]()
	q.prio = func(k string) int32 { return map[string]int32{"low": 0, "high": 100, "later": 1000}[k] }
	past := time.Now().Add(-time.Second)
	q.AddAt("low", past.Add(-time.Second)) // due first
	q.AddAt("high", past)
	q.AddAfter("later", time.Hour)
	ctx := context.Background()
	for _, want := range []string{"high", "low"} {
		got, ok := q.Get(ctx)
		if !ok || got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
		q.Done(got)
	}
	q.Add("low") // due again: it stays ahead of a key due later
	if got, _ := q.Get(ctx); got != "low" || q.Len() != 1 {
		t.Fatalf("got %q with %d waiting", got, q.Len())
	}
}
