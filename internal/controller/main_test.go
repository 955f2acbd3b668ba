package controller

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
	"github.com/berthhq/berth/internal/store/cache/cachetest"
	"github.com/berthhq/berth/internal/store/storetest"
)

var testStore *store.Store

func TestMain(m *testing.M) { os.Exit(storetest.Run(m, &testStore)) }

// env is one controller running against the shared etcd, with nodes registered.
type env struct {
	t    *testing.T
	ctx  context.Context
	feed *feed.Feed
	// caches is the test's cache registry, as a server process has one.
	caches *cache.Registry
}

// opts are the Options of a controller of the env.
func (e *env) opts() Options { return Options{Logger: storetest.QuietLogger(), Caches: e.caches} }

// newTestEnv starts a test on an empty store with its own cache registry and feed.
func newTestEnv(t *testing.T) *env {
	t.Helper()
	storetest.Reset(t, testStore)
	caches := cachetest.Registry(t, testStore, RegisterCaches)
	return &env{t: t, ctx: context.Background(), feed: feed.New(caches, storetest.QuietLogger()), caches: caches}
}

func newEnv(t *testing.T, nodes ...string) *env {
	t.Helper()
	return startEnv(t, func(e *env) runner { return NewAppController(testStore, e.feed, e.opts()) }, nodes...)
}

// startEnv registers the nodes, then runs a feed and the controller newController builds.
func startEnv(t *testing.T, newController func(*env) runner, nodes ...string) *env {
	t.Helper()
	e := newTestEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	e.ctx = ctx
	for _, n := range nodes {
		e.node(n)
	}
	// The registry started before the nodes were written: the feed must find them all
	// in the cache at its first list, as a server's feed finds the nodes of its store.
	e.eventually("the node cache holds the env's nodes", func() bool {
		for _, n := range nodes {
			if _, ok := e.caches.For(v4.KindNode).Get("", n); !ok {
				return false
			}
		}
		return true
	})
	done := make(chan struct{}, 2)
	go func() { e.feed.Run(ctx); done <- struct{}{} }()
	c := newController(e)
	go func() { c.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	return e
}

// node registers a ready node with 8 cpus, changed by changes after the defaults.
func (e *env) node(name string, changes ...func(*v4.Node)) {
	e.t.Helper()
	n := &v4.Node{TypeMeta: v4.TypeMeta{APIVersion: "v4", Kind: v4.KindNode}, Metadata: v4.ObjectMeta{Name: name},
		Spec:   v4.NodeSpec{Capacity: v4.NodeResources{CPU: 8, MemoryMB: 16000, DiskMB: 100000}},
		Status: v4.NodeStatus{Phase: v4.NodeReady}}
	v4.DefaultNode(n)
	for _, c := range changes {
		c(n)
	}
	if err := testStore.Create(context.Background(), n, store.Raw{}); err != nil {
		e.t.Fatal(err)
	}
}

// apply creates or updates a process with the given instances and restart policy.
func (e *env) apply(name string, instances int, policy string) {
	e.t.Helper()
	doc := fmt.Sprintf(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":"ctl"},
		"restartPolicy":%s,"constraint":{"intersectionItem":[{"unionData":[{"name":"hostname","operate":"MAXPER","type":3,"text":{"value":"4"}}]}]},
		"spec":{"instance":%d,"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web","resources":{"limits":{"cpu":"0.5","memory":"64"}}}]}}}}`,
		name, policy, instances)
	docs, err := v4.Parse([]byte(doc))
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := testStore.Apply(context.Background(), docs); err != nil {
		e.t.Fatal(err)
	}
}

// taskGroups returns the process's task groups by name.
func (e *env) taskGroups(name string) []*v4.TaskGroup {
	e.t.Helper()
	return e.listTaskGroups("ctl", func(tg *v4.TaskGroup) bool { return tg.Spec.Owner.Name == name })
}

// listTaskGroups returns the stored task groups of namespace ns that keep accepts (all
// of them when keep is nil).
func (e *env) listTaskGroups(ns string, keep func(*v4.TaskGroup) bool) []*v4.TaskGroup {
	e.t.Helper()
	objs, _, err := testStore.List(context.Background(), v4.KindTaskGroup, ns)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []*v4.TaskGroup
	for _, o := range objs {
		if tg := o.(*v4.TaskGroup); keep == nil || keep(tg) {
			out = append(out, tg)
		}
	}
	return out
}

// eventually polls cond for up to 15 s.
func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("timed out waiting for %s", what)
}

// report writes a task group's status as its agent would.
func (e *env) report(tg *v4.TaskGroup, phase string, started, finished time.Time) {
	e.t.Helper()
	e.setStatus(tg, v4.TaskGroupStatus{Phase: phase, Updated: time.Now(), StartedAt: started, FinishedAt: finished, Message: "reported by the test"})
}

// setStatus writes st as tg's stored status, reading it again after a conflict (a
// controller may write it meanwhile).
func (e *env) setStatus(tg *v4.TaskGroup, st v4.TaskGroupStatus) {
	e.t.Helper()
	for range 10 {
		cur, err := testStore.Get(context.Background(), v4.KindTaskGroup, tg.Metadata.Namespace, tg.Metadata.Name)
		if err != nil {
			e.t.Fatal(err)
		}
		c := cur.(*v4.TaskGroup)
		c.Status = st
		if err := testStore.Update(context.Background(), c, store.Raw{}); err == nil {
			return
		}
	}
	e.t.Fatalf("could not write the status of %s", tg.Metadata.Name)
}

func (e *env) status(name string) v4.WorkloadStatus {
	e.t.Helper()
	o, err := testStore.Get(context.Background(), v4.KindProcess, "ctl", name)
	if err != nil {
		e.t.Fatal(err)
	}
	return o.(*v4.Process).Status
}

// eventsEventually waits until the stored events matching filter satisfy ok and returns
// them. Controllers queue an event just after the write that a test waits for, so a test
// that reads events once could read before the queue has them.
func eventsEventually(t *testing.T, what string, filter v4.EventFilter, ok func([]v4.Event) bool) []v4.Event {
	t.Helper()
	var events []v4.Event
	deadline := time.Now().Add(15 * time.Second)
	for {
		storetest.FlushEvents(t, testStore)
		var err error
		if events, err = testStore.ListEvents(context.Background(), filter); err != nil {
			t.Fatal(err)
		}
		if ok(events) || time.Now().After(deadline) {
			return events
		}
		time.Sleep(50 * time.Millisecond)
	}
}
