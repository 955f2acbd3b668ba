package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// holdsOf lists the indexes of key that hold room in the env's snapshot.
func (e *env) holdsOf(key scheduler.AppKey) []int {
	var out []int
	e.feed.With(func(s *scheduler.Snapshot) { out = slices.Sorted(slices.Values(s.Holds(key))) })
	return out
}

// A hold the owner's status no longer names (put back from a status read just before
// its nomination was cleared) goes at the owner's next pass.
func TestStaleHoldGoesAtTheNextPass(t *testing.T) {
	e := newEnv(t, "n1")
	key := scheduler.AppKey{Kind: v4.KindProcess, Namespace: "ctl", Name: "web"}
	<-e.feed.Synced() // the first list would replace the snapshot
	e.feed.With(func(s *scheduler.Snapshot) {
		s.NominateCards(&scheduler.Request{App: key, Indexes: []int{5}}, 5, "n1", nil, scheduler.Options{})
	})
	if got := e.holdsOf(key); !slices.Equal(got, []int{5}) {
		t.Fatalf("holds before the pass: %v", got)
	}
	e.apply("web", 1, `{"policy":"Always"}`)
	e.eventually("the stale hold dropped", func() bool { return len(e.holdsOf(key)) == 0 })
}

// At the start of a term, before any controller places, the budgets and the holds of
// every owner's stored nominations go into the feed's snapshot: a job's hold is there
// although no job controller ran, so no other controller's placement takes its room.
func TestTermRestoresEveryOwnersHolds(t *testing.T) {
	e := newTestEnv(t)
	e.node("n1")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.feed.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	e.applyJob(`,"completions":1`)
	job := e.job()
	job.Status.Nominated = []v4.Nomination{{Index: 0, Node: "n1", At: time.Now().UTC()}}
	if err := testStore.Update(ctx, job, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	key := scheduler.AppKey{Kind: v4.KindJob, Namespace: "ctl", Name: "batch"}
	e.eventually("the job's cache has its nomination", func() bool {
		o, ok := e.caches.For(v4.KindJob).Get("ctl", "batch")
		return ok && len(o.(*v4.Job).Status.Nominated) == 1
	})
	if got := e.holdsOf(key); len(got) != 0 {
		t.Fatalf("holds before the restore: %v", got)
	}
	if err := restoreOwners(ctx, e.feed, e.caches, scheduler.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := e.holdsOf(key); !slices.Equal(got, []int{0}) {
		t.Fatalf("the job's holds after the restore: %v, want [0]", got)
	}
	var node string
	e.feed.With(func(s *scheduler.Snapshot) { node = s.Nominated(key, 0) })
	if node != "n1" {
		t.Errorf("the hold is on %q, want n1", node)
	}
}
