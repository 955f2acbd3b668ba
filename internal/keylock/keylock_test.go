package keylock

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// A key is held by one at a time; other keys are not held up; a waiter whose context
// ends gives up; the map is empty once nobody holds or waits.
func TestLocks(t *testing.T) {
	var l Locks
	ctx := context.Background()
	unlockA, err := l.Lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	unlockB, err := l.Lock(ctx, "b")
	if err != nil {
		t.Fatalf("another key: %v", err)
	}
	unlockB()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Lock(cctx, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a held key with an ended context: %v", err)
	}
	got := make(chan func())
	go func() {
		u, err := l.Lock(ctx, "a")
		if err != nil {
			t.Error(err)
		}
		got <- u
	}()
	unlockA()
	unlockA() // a second call is no second release
	(<-got)()
	if n := l.Len(); n != 0 {
		t.Errorf("%d keys left", n)
	}
}

// Many holders of one key never overlap.
func TestLocksExclusive(t *testing.T) {
	var l Locks
	var wg sync.WaitGroup
	inside := 0
	for range 50 {
		wg.Go(func() {
			unlock, err := l.Lock(context.Background(), "k")
			if err != nil {
				t.Error(err)
				return
			}
			defer unlock()
			if inside++; inside != 1 {
				t.Error("two holders at once")
			}
			inside--
		})
	}
	wg.Wait()
	if l.Len() != 0 {
		t.Errorf("%d keys left", l.Len())
	}
}
