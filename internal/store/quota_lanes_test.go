package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// A lane is held by one write at a time; a waiter whose context ends leaves, and a lane
// nobody holds or waits for is forgotten.
func TestLedgerLanes(t *testing.T) {
	var l ledgerLanes
	ctx := t.Context()
	first, err := l.take(ctx, "a", false)
	if err != nil {
		t.Fatal(err)
	}
	other, err := l.take(ctx, "b", false) // another namespace does not wait
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan heldLane)
	go func() {
		h, err := l.take(ctx, "a", false)
		if err != nil {
			t.Error(err)
		}
		got <- h
	}()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := l.take(short, "a", true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second write of a held lane: %v, want it to wait until its context ends", err)
	}
	select {
	case <-got:
		t.Fatal("a write took a lane another holds")
	default:
	}
	l.give(first)
	second := <-got
	l.give(second)
	l.give(other)
	if n := l.count(); n != 0 {
		t.Fatalf("%d lanes left with no write holding or waiting", n)
	}
}

// A user's write waiting for a lane goes before the system's writes that waited longer,
// but never more than usersInARow users' writes in a row while a system's write waits;
// among each, the first to wait goes first.
func TestLedgerLanesServeUsersFirst(t *testing.T) {
	var l ledgerLanes
	ctx := t.Context()
	holder, err := l.take(ctx, "a", false)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan string, usersInARow+4)
	waiting := func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.lanes["a"].users) + len(l.lanes["a"].others)
	}
	queued := func(name string, user bool) {
		before := waiting()
		go func() {
			h, err := l.take(ctx, "a", user)
			if err != nil {
				t.Error(err)
				return
			}
			order <- name
			l.give(h)
		}()
		for waiting() == before { // queued once the lane lists it
			time.Sleep(time.Millisecond)
		}
	}
	queued("system 1", false)
	queued("system 2", false)
	for i := range usersInARow + 2 {
		queued(fmt.Sprintf("user %d", i+1), true)
	}
	l.give(holder)
	var got []string
	for range usersInARow + 4 {
		got = append(got, <-order)
	}
	// usersInARow users, then berth's write that waited, then the users' again.
	if want := []string{"user 1", "user 2", "user 3", "user 4", "system 1", "user 5", "user 6", "system 2"}; !slices.Equal(got, want) {
		t.Fatalf("the lane went to %v, want %v", got, want)
	}
	if n := l.count(); n != 0 {
		t.Fatalf("%d lanes left", n)
	}
}

// One store's writes of a namespace never race on its ledger: they take turns, so none
// of their transactions fails and none is tried again, and the ledger counts them all.
func TestOneStoresWritesTakeTurnsOnTheLedger(t *testing.T) {
	bg, user := resetForQuota(t)
	s := testStore
	before := s.quota.failed.Load()
	var wg sync.WaitGroup
	for i := range 24 {
		ctx := bg
		if i%2 == 1 {
			ctx = user
		}
		wg.Go(func() {
			if err := s.Create(ctx, configMap("lanes", fmt.Sprintf("c%d", i), "x"), Raw{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := s.quota.failed.Load() - before; n != 0 {
		t.Errorf("%d transactions of one store lost a race on the namespace's ledger", n)
	}
	if n := s.quota.lanes.count(); n != 0 {
		t.Errorf("%d lanes left after the writes", n)
	}
	wantUsage(t, "lanes", 24)
}
