package driver

import (
	"context"
	"slices"
	"testing"
)

func TestWaiters(t *testing.T) {
	var w Waiters
	ctx := context.Background()
	a, _ := w.Add(ctx, "t1")
	b, _ := w.Add(ctx, "t1")
	cctx, cancel := context.WithCancel(ctx)
	abandoned, _ := w.Add(cctx, "t1")
	dropped, drop := w.Add(ctx, "t2")

	if got := w.Waiting(); !slices.Contains(got, "t1") || !slices.Contains(got, "t2") {
		t.Fatalf("Waiting = %v", got)
	}
	cancel()
	if _, ok := <-abandoned; ok {
		t.Fatal("a waiter whose context ended received a state")
	}
	drop()
	if _, ok := <-dropped; ok {
		t.Fatal("a cancelled waiter received a state")
	}
	if got := w.Waiting(); !slices.Equal(got, []string{"t1"}) {
		t.Fatalf("Waiting after the cancels = %v", got)
	}

	w.Notify("t1", State{ID: "t1", Info: Gone().Info})
	w.Notify("t1", State{ID: "again"}) // nobody waits any more: dropped
	for _, ch := range []<-chan State{a, b} {
		st, ok := <-ch
		if !ok || st.ID != "t1" {
			t.Fatalf("waiter got %+v %v", st, ok)
		}
		if _, ok := <-ch; ok {
			t.Fatal("a waiter's channel was not closed after its state")
		}
	}
	if got := w.Waiting(); len(got) != 0 {
		t.Fatalf("Waiting after Notify = %v", got)
	}
}
