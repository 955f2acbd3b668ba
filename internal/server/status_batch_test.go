package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store/cache"
)

func revOf(tg *v4.TaskGroup) int64 {
	rev, _ := strconv.ParseInt(tg.Metadata.ResourceVersion, 10, 64)
	return rev
}

// cacheHolds waits until the server's task group cache reflects the store's task group.
func cacheHolds(t *testing.T, s *Server, tg *v4.TaskGroup) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.taskGroupCache.WaitFor(ctx, revOf(tg)); err != nil {
		t.Fatal(err)
	}
}

// One batch of status writes is one transaction; what it cannot take is handed back to be
// written alone: a task group the cache does not hold, one bound to another node, a second
// write of the same task group. An ignored report (terminal is final) is answered at once.
func TestStatusBatch(t *testing.T) {
	s, _ := newTestServerOf(t, Config{})
	var last *v4.TaskGroup
	for i := range 50 {
		last = putTaskGroup(t, "ns", fmt.Sprintf("%d.web.ns.c.1", i), "n1", nil)
	}
	putTaskGroup(t, "ns", "0.other.ns.c.1", "n2", nil)
	last = putTaskGroup(t, "ns", "0.done.ns.c.1", "n1", func(tg *v4.TaskGroup) { tg.Status.Phase = v4.StatusFailed })
	cacheHolds(t, s, last)

	running := func(pid int) v4.TaskGroupStatus {
		var st v4.TaskGroupStatus
		if err := json.Unmarshal([]byte(statusJSON(t, v4.StatusRunning, pid)), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
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
	b := newStatusBatcher(testStore, s.taskGroupCache, quietLogger())
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
	behind := cache.New(testStore, cache.Config{Kind: v4.KindTaskGroup, Logger: quietLogger()})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); behind.Run(ctx) }()
	<-behind.Synced()
	stop()
	<-done
	putTaskGroup(t, "ns", "1.web.ns.c.1", "n1", nil)
	stale := &statusWrite{ns: "ns", name: "1.web.ns.c.1", node: "n1", st: running(5), done: make(chan statusResult, 1)}
	newStatusBatcher(testStore, behind, quietLogger()).write(context.Background(), []*statusWrite{stale})
	if r := <-stale.done; !r.alone {
		t.Fatalf("a batch over a stale cache: %+v", r)
	}
	if tg := getTaskGroup(t, "ns", "1.web.ns.c.1"); len(tg.Status.Tasks) > 0 && tg.Status.Tasks[0].Info.Pid == 5 {
		t.Fatalf("a stale batch was written: %+v", tg.Status)
	}
}

// A full report's writes share batches, and every one of them is written.
func TestAgentReportBatched(t *testing.T) {
	s, url := newTestServerOf(t, Config{})
	var rep v4.AgentReport
	var last *v4.TaskGroup
	for i := range 200 {
		name := fmt.Sprintf("%d.web.ns.c.1", i)
		last = putTaskGroup(t, "ns", name, "n1", nil)
		rep.TaskGroups = append(rep.TaskGroups, v4.TaskGroupReport{Namespace: "ns", Name: name,
			Status: v4.TaskGroupStatus{Phase: v4.StatusRunning, HostIP: "10.0.0.1"}})
	}
	cacheHolds(t, s, last)
	body, _ := json.Marshal(rep)
	wantStatus(t, agentCall(t, http.MethodPost, url+"/v1/agent/nodes/n1/report", string(body)), http.StatusOK)
	revs := map[string]bool{}
	for _, tr := range rep.TaskGroups {
		tg := getTaskGroup(t, "ns", tr.Name)
		if tg.Status.Phase != v4.StatusRunning {
			t.Fatalf("%s: %q", tr.Name, tg.Status.Phase)
		}
		revs[tg.Metadata.ResourceVersion] = true
	}
	t.Logf("200 status writes in %d transactions", len(revs))

	// The next full report repeats every status: nothing is written.
	before := map[string]string{}
	var latest *v4.TaskGroup
	for _, tr := range rep.TaskGroups {
		tg := getTaskGroup(t, "ns", tr.Name)
		before[tr.Name] = tg.Metadata.ResourceVersion
		if latest == nil || revOf(tg) > revOf(latest) {
			latest = tg
		}
	}
	cacheHolds(t, s, latest) // the report is compared with the cache
	wantStatus(t, agentCall(t, http.MethodPost, url+"/v1/agent/nodes/n1/report", string(body)), http.StatusOK)
	for _, tr := range rep.TaskGroups {
		if rv := getTaskGroup(t, "ns", tr.Name).Metadata.ResourceVersion; rv != before[tr.Name] {
			t.Fatalf("%s was written again by a report that changed nothing (%s -> %s)", tr.Name, before[tr.Name], rv)
		}
	}
}
