package cache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

var testStore *store.Store

func TestMain(m *testing.M) { os.Exit(storetest.Run(m, &testStore)) }

func byNode(o v4.Object) string { return o.(*v4.TaskGroup).Spec.Node }

// startCache runs a task group cache indexed by node until the test ends (reset the store
// first).
func startCache(t *testing.T, history, buffer int) *Cache {
	t.Helper()
	return startCacheWith(t, Config{History: history, SubscriberBuffer: buffer})
}

// startCacheWith is startCache with cfg, made a task group cache indexed by node.
func startCacheWith(t *testing.T, cfg Config) *Cache {
	t.Helper()
	cfg.Kind, cfg.Indexes, cfg.Logger = v4.KindTaskGroup, map[string]IndexFunc{"node": byNode}, storetest.QuietLogger()
	c := New(testStore, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-c.Synced():
	case <-time.After(10 * time.Second):
		t.Fatal("the cache did not sync")
	}
	return c
}

func taskGroup(name, node string) *v4.TaskGroup {
	return &v4.TaskGroup{
		TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
		Metadata: v4.ObjectMeta{Namespace: "ns", Name: name},
		Spec:     v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindProcess, Name: "app"}, Node: node},
	}
}

func tgs() store.TypedStore[*v4.TaskGroup] {
	return store.Typed[*v4.TaskGroup](testStore, v4.KindTaskGroup)
}

func create(t *testing.T, name, node string) *v4.TaskGroup {
	t.Helper()
	tg := taskGroup(name, node)
	if err := tgs().Create(context.Background(), tg, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	return tg
}

func move(t *testing.T, name, node string) {
	t.Helper()
	tg, err := tgs().Get(context.Background(), "ns", name)
	if err != nil {
		t.Fatal(err)
	}
	tg.Spec.Node = node
	if err := tgs().Update(context.Background(), tg, store.Raw{}); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, name string) {
	t.Helper()
	if _, err := testStore.Delete(context.Background(), v4.KindTaskGroup, "ns", name, ""); err != nil {
		t.Fatal(err)
	}
}

// storeRev is etcd's current revision.
func storeRev(t *testing.T) int64 {
	t.Helper()
	resp, err := testStore.Client().Get(context.Background(), "/none")
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// caughtUp waits until the cache reflects every write made so far.
func caughtUp(t *testing.T, c *Cache) {
	t.Helper()
	want := storeRev(t)
	deadline := time.Now().Add(10 * time.Second)
	for c.Rev() < want {
		if time.Now().After(deadline) {
			t.Fatalf("the cache is at %d, the store at %d", c.Rev(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// watchNode watches the task groups of node from revision from, until the test ends or
// it calls stop.
func watchNode(t *testing.T, c *Cache, node string, from int64) (ch <-chan store.Event, stop context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch, err := c.Watch(ctx, "node", node, from)
	if err != nil {
		t.Fatal(err)
	}
	return ch, cancel
}

func names(objs []v4.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetMeta().Name)
	}
	return out
}

// Lists by node follow creates, moves and deletes, and the index forgets emptied values.
func TestCacheIndexes(t *testing.T) {
	storetest.Reset(t, testStore)
	create(t, "a", "n1") // before the cache: from its list
	c := startCache(t, 0, 0)
	create(t, "b", "n1")
	create(t, "c", "n2")
	caughtUp(t, c)
	for _, tc := range []struct{ node, want string }{{"n1", "[a b]"}, {"n2", "[c]"}, {"n3", "[]"}} {
		objs, _, err := c.List("node", tc.node)
		if err != nil || fmt.Sprint(names(objs)) != tc.want {
			t.Errorf("node %s: %v %v, want %s", tc.node, names(objs), err, tc.want)
		}
	}
	move(t, "a", "n2")
	remove(t, "b")
	caughtUp(t, c)
	if objs, _, _ := c.List("node", "n1"); len(objs) != 0 {
		t.Errorf("n1 after the move and the delete: %v", names(objs))
	}
	if objs, _, _ := c.List("node", "n2"); fmt.Sprint(names(objs)) != "[a c]" {
		t.Errorf("n2: %v", names(objs))
	}
	if all, rev, _ := c.List("", ""); len(all) != 2 || rev != storeRev(t) {
		t.Errorf("all: %v at %d", names(all), rev)
	}
	if _, ok := c.index["node"]["n1"]; ok {
		t.Error("an emptied index value is kept")
	}
	if _, _, err := c.List("owner", "x"); err == nil {
		t.Error("an unknown index answers")
	}
}

// next reads one event, or fails after a while.
func next(t *testing.T, ch <-chan store.Event) store.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the watch closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	return store.Event{}
}

// A watch of one node gets its objects, then their changes; a move away is a DELETED; the
// other nodes' changes never reach it.
func TestCacheWatchByNode(t *testing.T) {
	storetest.Reset(t, testStore)
	c := startCache(t, 0, 0)
	create(t, "a", "n1")
	create(t, "x", "n2")
	caughtUp(t, c)
	ch, stop := watchNode(t, c, "n1", 0)
	if ev := next(t, ch); ev.Type != store.Added || ev.Object.GetMeta().Name != "a" {
		t.Fatalf("first: %s %s", ev.Type, ev.Object.GetMeta().Name)
	}
	create(t, "y", "n2")
	create(t, "b", "n1")
	move(t, "a", "n2")
	move(t, "x", "n1")
	remove(t, "b")
	want := []string{"ADDED b", "DELETED a", "MODIFIED x", "DELETED b"}
	for _, w := range want {
		ev := next(t, ch)
		if got := string(ev.Type) + " " + ev.Object.GetMeta().Name; got != w {
			t.Fatalf("got %s, want %s", got, w)
		}
	}
	stop()
	for range ch { // closed once the context ends
	}
}

// A watch resuming from a recent revision gets exactly the changes after it; one from a
// revision older than the cache's history is told to list again (store.ErrCompacted).
func TestCacheWatchResumeAndGap(t *testing.T) {
	storetest.Reset(t, testStore)
	c := startCache(t, 8, 0)
	create(t, "a", "n1")
	caughtUp(t, c)
	from := c.Rev()
	create(t, "b", "n1")
	move(t, "a", "n2")
	caughtUp(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := c.Watch(ctx, "node", "n1", from)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"ADDED b", "DELETED a"} {
		if ev := next(t, ch); string(ev.Type)+" "+ev.Object.GetMeta().Name != w {
			t.Fatalf("got %s %s, want %s", ev.Type, ev.Object.GetMeta().Name, w)
		}
	}
	for i := range 10 { // more changes than the history holds
		create(t, fmt.Sprintf("f%d", i), "n3")
	}
	caughtUp(t, c)
	if _, err := c.Watch(ctx, "node", "n1", from); !errors.Is(err, store.ErrCompacted) {
		t.Fatalf("a watch from before the history: %v", err)
	}
	if _, err := c.Watch(ctx, "node", "n1", c.Rev()); err != nil {
		t.Fatalf("a watch from now: %v", err)
	}
}

// A watcher that does not read is cut off with a fell-behind error naming the revision
// to resume from, and the cache goes on for everyone else.
func TestCacheSlowWatcherIsCut(t *testing.T) {
	storetest.Reset(t, testStore)
	c := startCache(t, 0, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow, err := c.Watch(ctx, "node", "n1", c.Rev())
	if err != nil {
		t.Fatal(err)
	}
	fast, err := c.Watch(ctx, "", "", c.Rev())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		create(t, fmt.Sprintf("t%d", i), "n1")
		next(t, fast)
	}
	var last store.Event
	n := 0
	for ev := range slow {
		last = ev
		n++
	}
	// At most the 4 queued, the one its pump holds, and the error.
	if last.Type != store.Error || !errors.Is(last.Err, store.ErrFellBehind) || n > 6 {
		t.Fatalf("slow watcher: %d events, last %s %v", n, last.Type, last.Err)
	}
	var fb *store.FellBehindError
	if !errors.As(last.Err, &fb) || fb.Revision == 0 {
		t.Fatalf("no revision to resume from: %v", last.Err)
	}
}

// A watch from 0 gets every object even when they outnumber the subscriber buffer: only
// changes that pile up beyond the buffer cut a watcher off.
func TestCacheBacklogBeyondBuffer(t *testing.T) {
	storetest.Reset(t, testStore)
	c := startCache(t, 0, 2)
	for i := range 6 {
		create(t, fmt.Sprintf("t%d", i), "n1")
	}
	caughtUp(t, c)
	ch, _ := watchNode(t, c, "n1", 0)
	create(t, "t6", "n1")
	for i := range 7 {
		if ev := next(t, ch); ev.Type == store.Error {
			t.Fatalf("event %d: cut off: %v", i, ev.Err)
		}
	}
}

// WaitFor returns once the cache holds a write, so a writer reads its own writes.
func TestCacheWaitFor(t *testing.T) {
	storetest.Reset(t, testStore)
	c := startCache(t, 0, 0)
	for i := range 20 {
		tg := create(t, fmt.Sprintf("t%d", i), "n1")
		rev, _ := strconv.ParseInt(tg.Metadata.ResourceVersion, 10, 64)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := c.WaitFor(ctx, rev)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if objs, _, _ := c.List("node", "n1"); len(objs) != i+1 {
			t.Fatalf("after waiting for %s: %d objects, want %d", tg.Metadata.ResourceVersion, len(objs), i+1)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := c.WaitFor(ctx, c.Rev()+1000); err == nil {
		t.Fatal("waiting for a revision never written returned")
	}
}

// Get answers from memory, with what the cache holds.
func TestCacheGet(t *testing.T) {
	storetest.Reset(t, testStore)
	c := startCache(t, 0, 0)
	create(t, "a", "n1")
	caughtUp(t, c)
	if o, ok := c.Get("ns", "a"); !ok || o.(*v4.TaskGroup).Spec.Node != "n1" {
		t.Fatalf("get a: %v %v", o, ok)
	}
	if _, ok := c.Get("ns", "none"); ok {
		t.Fatal("got an object never created")
	}
}

// createAll writes the task groups in one transaction (one revision) and returns it.
func createAll(t *testing.T, groups ...*v4.TaskGroup) int64 {
	t.Helper()
	objs := make([]v4.Object, len(groups))
	for i, tg := range groups {
		objs[i] = tg
	}
	if _, err := testStore.CreateAll(context.Background(), objs); err != nil {
		t.Fatal(err)
	}
	rev, _ := strconv.ParseInt(groups[0].Metadata.ResourceVersion, 10, 64)
	return rev
}

// The objects of one transaction reach a reader together: every watcher of their node gets
// all of them, and WaitFor of their revision sees all of them.
func TestCacheAppliesATransactionWhole(t *testing.T) {
	storetest.Reset(t, testStore)
	c := startCache(t, 0, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watches := map[string]<-chan store.Event{}
	for _, node := range []string{"n1", "n2"} {
		ch, err := c.Watch(ctx, "node", node, c.Rev())
		if err != nil {
			t.Fatal(err)
		}
		watches[node] = ch
	}
	rev := createAll(t, taskGroup("a", "n1"), taskGroup("b", "n2"), taskGroup("c", "n1"), taskGroup("d", "n1"), taskGroup("e", "n2"))
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	if err := c.WaitFor(wctx, rev); err != nil {
		t.Fatal(err)
	}
	if objs, _, _ := c.List("node", "n1"); len(objs) != 3 {
		t.Fatalf("at the transaction's revision the cache lists %d of n1's 3", len(objs))
	}
	for node, want := range map[string][]string{"n1": {"a", "c", "d"}, "n2": {"b", "e"}} {
		for _, name := range want {
			ev := next(t, watches[node])
			if ev.Type != store.Added || ev.Object.GetMeta().Name != name || ev.Revision != rev {
				t.Fatalf("%s: got %s %s at %d, want ADDED %s at %d", node, ev.Type, ev.Object.GetMeta().Name, ev.Revision, name, rev)
			}
		}
	}
}

// A watcher cut off in the middle of a transaction's changes resumes before it, so it
// misses none of them.
func TestCacheCutMidTransactionResumesBeforeIt(t *testing.T) {
	storetest.Reset(t, testStore)
	c := startCache(t, 0, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := create(t, "first", "n1")
	caughtUp(t, c)
	ch, err := c.Watch(ctx, "node", "n1", 0)
	if err != nil {
		t.Fatal(err)
	}
	var groups []*v4.TaskGroup
	for i := range 6 {
		groups = append(groups, taskGroup(fmt.Sprintf("t%d", i), "n1"))
	}
	rev := createAll(t, groups...)
	// Read nothing until the cache has the transaction: its six changes then meet a
	// buffer of two whatever the machine's load (a reader as fast as the cache would
	// never be cut off).
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	if err := c.WaitFor(wctx, rev); err != nil {
		t.Fatal(err)
	}
	var last store.Event
	for last.Type != store.Error {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("the watch closed without an error")
			}
			last = ev
		case <-time.After(5 * time.Second):
			t.Fatal("not cut off: the watch went quiet")
		}
	}
	var fb *store.FellBehindError
	if !errors.As(last.Err, &fb) {
		t.Fatalf("not cut off: last event %s %v", last.Type, last.Err)
	}
	if want, _ := strconv.ParseInt(before.Metadata.ResourceVersion, 10, 64); fb.Revision >= rev || fb.Revision < want {
		t.Fatalf("resume from %d: the transaction is at %d, the whole one before at %d", fb.Revision, rev, want)
	}
	again, err := c.Watch(ctx, "node", "n1", fb.Revision)
	if err != nil {
		t.Fatal(err)
	}
	for i := range groups {
		if ev := next(t, again); ev.Object.GetMeta().Name != groups[i].Metadata.Name {
			t.Fatalf("resumed watch: event %d is %s", i, ev.Object.GetMeta().Name)
		}
	}
}

// WaitFor reaches a revision that changed nothing of the cache's kind (etcd's progress
// notification tells the cache it is there).
func TestCacheWaitForOtherKindsRevision(t *testing.T) {
	storetest.Reset(t, testStore)
	c := startCache(t, 0, 0)
	create(t, "a", "n1")
	cm := &v4.ConfigMap{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindConfigMap},
		Metadata: v4.ObjectMeta{Namespace: "ns", Name: "other"}}
	if err := testStore.Create(context.Background(), cm, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	rev, _ := strconv.ParseInt(cm.Metadata.ResourceVersion, 10, 64)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.WaitFor(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if objs, _, _ := c.List("node", "n1"); len(objs) != 1 {
		t.Fatalf("at revision %d the cache lists %d task groups of n1, want 1", rev, len(objs))
	}
}

// When its own watch of etcd breaks, the cache lists again: what changed meanwhile is
// there, what was deleted is gone, its watchers are cut off (410: they list again), and
// a watch from before the new list is told to list again.
func TestCacheListsAgainAfterItsWatchBreaks(t *testing.T) {
	storetest.Reset(t, testStore)
	c := New(testStore, Config{Kind: v4.KindTaskGroup, Indexes: map[string]IndexFunc{"node": byNode}, Logger: storetest.QuietLogger()})
	breakIt := make(chan struct{})
	real := c.watch
	c.watch = func(ctx context.Context, from int64) (<-chan store.Event, error) {
		in, err := real(ctx, from)
		if err != nil {
			return nil, err
		}
		out := make(chan store.Event)
		go func() {
			defer close(out)
			for {
				select {
				case ev, ok := <-in:
					if !ok {
						return
					}
					select {
					case out <- ev:
					case <-breakIt:
						return
					}
				case <-breakIt:
					return
				}
			}
		}()
		return out, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-c.Synced()

	a := create(t, "a", "n1")
	caughtUp(t, c)
	before := c.Rev()
	w, err := c.Watch(ctx, "node", "n1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, w); ev.Object.GetMeta().Name != "a" {
		t.Fatalf("first event %s", ev.Object.GetMeta().Name)
	}
	close(breakIt) // every watch from now on breaks at its first change
	if _, err := tgs().Delete(context.Background(), "ns", a.Metadata.Name, ""); err != nil {
		t.Fatal(err)
	}
	create(t, "b", "n1")
	for ev := range w {
		if ev.Type == store.Error {
			var fb *store.FellBehindError
			if !errors.As(ev.Err, &fb) {
				t.Fatalf("the watcher ended with %v", ev.Err)
			}
			break
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		objs, _, err := c.List("", "")
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) == 1 && objs[0].GetMeta().Name == "b" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the broken watch the cache holds %d objects", len(objs))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := c.Watch(ctx, "node", "n1", before); !errors.Is(err, store.ErrCompacted) {
		t.Fatalf("a watch from before the new list: %v", err)
	}
}
