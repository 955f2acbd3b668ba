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
// every owner's stored nominations go into the feed's snapshot: a job's and a workflow
// step's holds are there although neither's controller ran, so no other controller's
// placement takes their room. A step's hold has the size its nomination recorded.
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
	e.applyWf(wfOneStep("7", preemptLower))
	wf := e.wf()
	wf.Status.Nominated = []v4.Nomination{{Index: 2, Step: "wf", Node: "n1", At: time.Now().UTC(),
		Hold: &v4.NominationHold{Resources: v4.NodeResources{CPU: 7, MemoryMB: 64}, Priority: 100}}}
	if err := testStore.Update(ctx, wf, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	jobKey := scheduler.AppKey{Kind: v4.KindJob, Namespace: "ctl", Name: "batch"}
	wfKey := scheduler.AppKey{Kind: v4.KindWorkflow, Namespace: "ctl", Name: "wf"}
	e.eventually("the caches have the nominations", func() bool {
		j, ok1 := e.caches.For(v4.KindJob).Get("ctl", "batch")
		w, ok2 := e.caches.For(v4.KindWorkflow).Get("ctl", "wf")
		return ok1 && ok2 && len(j.(*v4.Job).Status.Nominated) == 1 && len(w.(*v4.Workflow).Status.Nominated) == 1
	})
	if got := append(e.holdsOf(jobKey), e.holdsOf(wfKey)...); len(got) != 0 {
		t.Fatalf("holds before the restore: %v", got)
	}
	if err := restoreOwners(ctx, e.feed, e.caches, scheduler.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, h := range []struct {
		key   scheduler.AppKey
		index int
	}{{jobKey, 0}, {wfKey, 2}} {
		if got := e.holdsOf(h.key); !slices.Equal(got, []int{h.index}) {
			t.Errorf("%s's holds after the restore: %v, want [%d]", h.key, got, h.index)
		}
		var node string
		e.feed.With(func(s *scheduler.Snapshot) { node = s.Nominated(h.key, h.index) })
		if node != "n1" {
			t.Errorf("%s's hold is on %q, want n1", h.key, node)
		}
	}
	// The step's hold takes 7 of n1's 8 cpus: a request of 2 fits nowhere.
	var res scheduler.Result
	e.feed.With(func(s *scheduler.Snapshot) {
		res = s.Place(&scheduler.Request{App: scheduler.AppKey{Kind: v4.KindProcess, Namespace: "ctl", Name: "other"},
			Indexes: []int{0}, Resources: v4.NodeResources{CPU: 2, MemoryMB: 64}}, scheduler.Options{})
	})
	if len(res.Placements) != 0 {
		t.Errorf("a request of 2 cpus was placed on %s, in the room the step holds", res.Placements[0].Node)
	}
}
