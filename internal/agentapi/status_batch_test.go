package agentapi

import (
	"context"
	"fmt"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
	"github.com/berthhq/berth/internal/store/cache/cachetest"
	"github.com/berthhq/berth/internal/store/storetest"
)

// taskGroupCache is a synced task group cache over the package's store, holding what
// the store holds now.
func taskGroupCache(t *testing.T) *cache.Cache {
	t.Helper()
	c := cachetest.Registry(t, testStore, controller.RegisterCaches).For(v4.KindTaskGroup)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := httpapi.CacheCurrent(ctx, testStore, c); err != nil {
		t.Fatal(err)
	}
	return c
}

// running is a Running status of task group web's one task, with pid.
func running(pid int) v4.TaskGroupStatus {
	return v4.TaskGroupStatus{Phase: v4.StatusRunning, HostIP: "10.0.0.1",
		Tasks: []v4.TaskStatus{{Name: "weba", Status: v4.StatusRunning, Info: v4.ContainerInfo{Pid: pid}}}}
}

// stoppedTaskGroupCache is a task group cache that synced with the store, then stopped
// following it: behind every write made after.
func stoppedTaskGroupCache(t *testing.T) *cache.Cache {
	t.Helper()
	c := cache.New(testStore, cache.Config{Kind: v4.KindTaskGroup, Logger: storetest.QuietLogger()})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	<-c.Synced()
	stop()
	<-done
	return c
}

// One batch of status writes is one transaction; what it cannot take is handed back to be
// written alone: a task group the cache does not hold, one bound to another node, a second
// write of the same task group. An ignored report (terminal is final) is answered at once.
func TestStatusBatch(t *testing.T) {
	storetest.Reset(t, testStore)
	for i := range 50 {
		createTaskGroup(t, "ns", fmt.Sprintf("%d.web.ns.c.1", i), "n1", "")
	}
	createTaskGroup(t, "ns", "0.other.ns.c.1", "n2", "")
	createTaskGroup(t, "ns", "0.done.ns.c.1", "n1", v4.StatusFailed)
	tgs := taskGroupCache(t)

	var batch []*statusWrite
	for i := range 50 {
		batch = append(batch, &statusWrite{ns: "ns", name: fmt.Sprintf("%d.web.ns.c.1", i), node: "n1", st: running(100 + i)})
	}
	batch = append(batch,
		&statusWrite{ns: "ns", name: "0.web.ns.c.1", node: "n1", st: running(7)}, // the same task group again
		&statusWrite{ns: "ns", name: "9.gone.ns.c.1", node: "n1", st: running(1)},
		&statusWrite{ns: "ns", name: "0.other.ns.c.1", node: "n1", st: running(1)},
		&statusWrite{ns: "ns", name: "0.done.ns.c.1", node: "n1", st: func() v4.TaskGroupStatus { st := running(0); st.Phase = v4.StatusFinish; return st }()},
	)
	for _, w := range batch {
		w.done = make(chan statusResult, 1)
	}
	b := newStatusBatcher(testStore, tgs, storetest.QuietLogger())
	b.write(context.Background(), batch)

	revs := map[string]bool{}
	for i, w := range batch[:50] {
		r := <-w.done
		if r.err != nil || r.alone || !r.changed || r.tg.Status.Tasks[0].Info.Pid != 100+i {
			t.Fatalf("write %d: %+v", i, r)
		}
		stored := getTaskGroup(t, "ns", w.name)
		if stored.Status.Phase != v4.StatusRunning || stored.Status.Tasks[0].Info.Pid != 100+i || stored.Spec.Node != "n1" {
			t.Fatalf("%s stored: %+v", w.name, stored.Status)
		}
		revs[stored.Metadata.ResourceVersion] = true
	}
	if len(revs) != 1 {
		t.Fatalf("50 writes of one batch took %d revisions", len(revs))
	}
	for _, w := range batch[50:53] {
		if r := <-w.done; !r.alone {
			t.Errorf("%s: %+v, want it written alone", w.name, r)
		}
	}
	if r := <-batch[53].done; r.alone || r.changed || r.tg.Status.Phase != v4.StatusFailed {
		t.Errorf("a report after a terminal status: %+v", r)
	}

	// A batch read from a cache behind the store is not written: its writes go alone. (A
	// cache whose watch has stopped is behind for sure.)
	behind := stoppedTaskGroupCache(t)
	if err := testStore.Update(context.Background(), getTaskGroup(t, "ns", "1.web.ns.c.1"), store.Raw{}); err != nil {
		t.Fatal(err) // a revision the stale cache does not hold
	}
	stale := &statusWrite{ns: "ns", name: "1.web.ns.c.1", node: "n1", st: running(5), done: make(chan statusResult, 1)}
	newStatusBatcher(testStore, behind, storetest.QuietLogger()).write(context.Background(), []*statusWrite{stale})
	if r := <-stale.done; !r.alone {
		t.Fatalf("a batch over a stale cache: %+v", r)
	}
	if tg := getTaskGroup(t, "ns", "1.web.ns.c.1"); len(tg.Status.Tasks) > 0 && tg.Status.Tasks[0].Info.Pid == 5 {
		t.Fatalf("a stale batch was written: %+v", tg.Status)
	}
}

// A batch reads the task groups the batcher itself wrote from its own copies while the
// cache is behind them, so that batches follow one another without waiting for the
// cache; a task group changed by another writer since still fails the comparison.
func TestStatusBatchesFollowTheirOwnWrites(t *testing.T) {
	storetest.Reset(t, testStore)
	createTaskGroup(t, "ns", "0.web.ns.c.1", "n1", "")
	createTaskGroup(t, "ns", "1.web.ns.c.1", "n1", "")
	// A cache whose watch has stopped: it never sees the batches' writes.
	behind := stoppedTaskGroupCache(t)

	b := newStatusBatcher(testStore, behind, storetest.QuietLogger())
	write := func(name string, pid int) statusResult {
		w := &statusWrite{ns: "ns", name: name, node: "n1", st: running(pid), done: make(chan statusResult, 1)}
		b.write(context.Background(), []*statusWrite{w})
		return <-w.done
	}
	for i, pid := range []int{10, 11, 12} {
		r := write("0.web.ns.c.1", pid)
		if r.err != nil || r.alone {
			t.Fatalf("batch %d over its own last write: %+v, want it written in the batch", i, r)
		}
		if got := getTaskGroup(t, "ns", "0.web.ns.c.1").Status.Tasks[0].Info.Pid; got != pid {
			t.Fatalf("batch %d: stored pid %d, want %d", i, got, pid)
		}
	}

	if r := write("1.web.ns.c.1", 20); r.err != nil || r.alone {
		t.Fatalf("first write: %+v", r)
	}
	if err := testStore.Update(context.Background(), getTaskGroup(t, "ns", "1.web.ns.c.1"), store.Raw{}); err != nil {
		t.Fatal(err) // another writer, after the batch's write
	}
	if r := write("1.web.ns.c.1", 21); !r.alone {
		t.Fatalf("a batch over a task group changed behind its own copy: %+v, want it written alone", r)
	}
	if got := getTaskGroup(t, "ns", "1.web.ns.c.1").Status.Tasks[0].Info.Pid; got != 20 {
		t.Fatalf("a batch over a stale copy was written: pid %d", got)
	}
}
