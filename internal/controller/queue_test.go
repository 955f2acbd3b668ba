package controller

import (
	"context"
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
