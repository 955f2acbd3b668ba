package store

import (
	"context"
	"testing"
	"time"
)

// The alive view follows etcd: a node appears with its first beat, goes when its lease
// expires, and comes back with a beat after that, with no list of the keys between.
func TestAliveViewFollowsTheLeases(t *testing.T) {
	resetStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	view := testStore.FollowAlive(ctx)
	isAlive := func(node string) (alive, synced bool) {
		synced = view.Read(func(m map[string]bool) { alive = m[node] })
		return alive, synced
	}
	waitFor := func(what string, want bool) {
		t.Helper()
		for end := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if alive, synced := isAlive("viewed"); synced && alive == want {
				return
			}
			if time.Now().After(end) {
				t.Fatalf("the view did not see the node %s in 15 s", what)
			}
		}
	}
	waitFor("absent before any beat", false)
	if _, err := testStore.Beat(ctx, "viewed", time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor("alive after its first beat", true)
	waitFor("gone after its lease expired", false)
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		if fresh, err := testStore.Beat(ctx, "viewed", time.Second); err != nil {
			t.Fatal(err)
		} else if fresh {
			break
		}
		if time.Now().After(end) {
			t.Fatal("beats after the expiry did not make the node alive again in 5 s")
		}
	}
	waitFor("alive again after a fresh beat", true)
}

// A view ends with its context, and reads as not synced once it did.
func TestAliveViewEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	view := testStore.FollowAlive(ctx)
	for end := time.Now().Add(10 * time.Second); !view.Read(func(map[string]bool) {}); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the view did not list the alive keys in 10 s")
		}
	}
	cancel()
	for end := time.Now().Add(10 * time.Second); view.Read(func(map[string]bool) {}); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the view still reads as synced 10 s after its context ended")
		}
	}
}
