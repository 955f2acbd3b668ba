package feed

import (
	"context"
	"fmt"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache/cachetest"
)

// The feed lists nodes and task groups from the shared caches, then follows them.
func TestFeedListsThenWatches(t *testing.T) {
	resetStore(t)
	createNode(t, "node-1")
	createTaskGroup(t, "web", 0, "node-1", v4.StatusRunning)

	f := New(cachetest.Registry(t, testStore), quietLogger())
	select {
	case <-f.Synced():
		t.Fatal("synced before Run")
	default:
	}
	runFeed(t, f)
	// The first list is in the snapshot as soon as Synced is closed.
	if got := observe(f, "web"); got != (state{nodes: 1, indexes: "[0]"}) {
		t.Fatalf("after sync: %+v", got)
	}

	createNode(t, "node-2")
	createTaskGroup(t, "web", 1, "node-2", v4.StatusStaging)
	createTaskGroup(t, "web", 2, "node-2", v4.StatusRunning)
	eventually(t, f, "web", state{nodes: 2, indexes: "[0 1 2]"})

	// A task group that failed no longer counts; a deleted one and a deleted node are gone.
	ctx := context.Background()
	tgs := store.Typed[*v4.TaskGroup](testStore, v4.KindTaskGroup)
	tg, err := tgs.Get(ctx, "feed", tgName("web", 2))
	if err != nil {
		t.Fatal(err)
	}
	tg.Status.Phase = v4.StatusFailed
	if err := tgs.Update(ctx, tg, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, f, "web", state{nodes: 2, indexes: "[0 1]"})
	if _, err := tgs.Delete(ctx, "feed", tgName("web", 0), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := testStore.Delete(ctx, v4.KindNode, "", "node-1", ""); err != nil {
		t.Fatal(err)
	}
	eventually(t, f, "web", state{nodes: 1, indexes: "[1]"})

	// A clone is independent of the live snapshot.
	clone := f.Clone()
	createNode(t, "node-3")
	eventually(t, f, "web", state{nodes: 2, indexes: "[1]"})
	if clone.Nodes() != 1 {
		t.Fatalf("clone sees %d nodes, want 1", clone.Nodes())
	}
}

// A feed that stops and runs again, or a new feed, lists afresh: what changed while no
// feed ran is there, and what was deleted is gone.
func TestFeedRestart(t *testing.T) {
	resetStore(t)
	createNode(t, "node-1")
	createNode(t, "node-2")
	createTaskGroup(t, "api", 0, "node-1", v4.StatusRunning)

	caches := cachetest.Registry(t, testStore)
	f := New(caches, quietLogger())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	<-f.Synced()
	eventually(t, f, "api", state{nodes: 2, indexes: "[0]"})
	if err := f.Run(ctx); err == nil {
		t.Fatal("a second concurrent Run did not fail")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// Changes while stopped.
	if _, err := testStore.Delete(context.Background(), v4.KindNode, "", "node-2", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := testStore.Delete(context.Background(), v4.KindTaskGroup, "feed", tgName("api", 0), ""); err != nil {
		t.Fatal(err)
	}
	createTaskGroup(t, "api", 3, "node-1", v4.StatusRunning)
	if got := observe(f, "api"); got != (state{nodes: 2, indexes: "[0]"}) {
		t.Fatalf("stopped feed changed: %+v", got)
	}

	runFeed(t, f) // the same feed again
	eventually(t, f, "api", state{nodes: 1, indexes: "[3]"})

	g := New(caches, quietLogger()) // and a new one
	runFeed(t, g)
	if got := observe(g, "api"); got != (state{nodes: 1, indexes: "[3]"}) {
		t.Fatalf("new feed: %+v", got)
	}
}

// With serialises callers with the feed's own updates (run with -race).
func TestFeedWithIsSerialised(t *testing.T) {
	resetStore(t)
	f := New(cachetest.Registry(t, testStore), quietLogger())
	runFeed(t, f)
	stop := make(chan struct{})
	readers := make(chan struct{})
	go func() {
		defer close(readers)
		for {
			select {
			case <-stop:
				return
			default:
			}
			f.With(func(s *scheduler.Snapshot) { _ = s.Nodes() })
			_ = f.Clone().Nodes()
		}
	}()
	for i := range 10 {
		createNode(t, fmt.Sprintf("node-%d", i))
	}
	eventually(t, f, "x", state{nodes: 10, indexes: "[]"})
	close(stop)
	select {
	case <-readers:
	case <-time.After(10 * time.Second):
		t.Fatal("reader did not stop")
	}
}

// The feed follows volume objects too: a request claiming one sees it come and go.
func TestFeedVolumes(t *testing.T) {
	resetStore(t)
	createNode(t, "node-1")
	f := New(cachetest.Registry(t, testStore), quietLogger())
	runFeed(t, f)
	req := &scheduler.Request{App: appKey("db"), Indexes: []int{0},
		Volumes: []v4.PodVolume{{Name: "d", CSI: &v4.CSIVolumeSource{Volume: "data"}}}}
	reason := func() string {
		var why string
		f.With(func(s *scheduler.Snapshot) { why = s.Clone().Place(req, scheduler.Options{}).Reason.String() })
		return why
	}
	waitReason := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for got := reason(); got != want; got = reason() {
			if time.Now().After(deadline) {
				t.Fatalf("reason %q, want %q", got, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitReason("1 node: 1 volume data: no such volume")
	v := &v4.CSIVolume{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindVolume},
		Metadata: v4.ObjectMeta{Namespace: "feed", Name: "data"}, Spec: v4.VolumeSpec{Plugin: "hp"},
		Status: v4.VolumeStatus{Phase: v4.VolumeAvailable}}
	if err := testStore.Create(context.Background(), v, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	waitReason("1 node: 1 volume data: the node has no healthy node plugin hp")
	if _, err := testStore.Delete(context.Background(), v4.KindVolume, "feed", "data", ""); err != nil {
		t.Fatal(err)
	}
	waitReason("1 node: 1 volume data: no such volume")
}

// A fresh list (after a watch ended, or a new Run) loses what only the controllers put
// into the snapshot, such as the hold of a nomination, unless OnFresh puts it back.
func TestFeedOnFresh(t *testing.T) {
	for _, hook := range []bool{false, true} {
		t.Run(fmt.Sprintf("OnFresh set %v", hook), func(t *testing.T) {
			resetStore(t)
			createNode(t, "node-1")
			f := New(cachetest.Registry(t, testStore), quietLogger())
			held := appKey("held")
			hold := func(s *scheduler.Snapshot) {
				s.NominateCards(&scheduler.Request{App: held, Indexes: []int{0}}, 0, "node-1", nil, scheduler.Options{})
			}
			if hook {
				f.OnFresh(hold)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- f.Run(ctx) }()
			<-f.Synced()
			f.With(hold)
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			createTaskGroup(t, "api", 0, "node-1", v4.StatusRunning)
			runFeed(t, f)
			eventually(t, f, "api", state{nodes: 1, indexes: "[0]"}) // the fresh snapshot is live
			var holds []int
			f.With(func(s *scheduler.Snapshot) { holds = s.Holds(held) })
			if kept := len(holds) == 1; kept != hook {
				t.Errorf("holds after a fresh list %v; want the hold kept: %v", holds, hook)
			}
		})
	}
}
