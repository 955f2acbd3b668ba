package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// portConflictRun is a run that did not start because port 31000 was taken.
func portConflictRun(random bool, retries int) *v4.TaskGroup {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	return &v4.TaskGroup{
		Spec: v4.TaskGroupSpec{Node: "n1", ReschedTimes: 2, CrashLoops: 3, PortRetries: retries,
			Ports: []v4.AllocatedPort{{Name: "http", HostPort: 31000, Random: random}, {Name: "admin", HostPort: 8080}}},
		Status: v4.TaskGroupStatus{Phase: v4.StatusFailed, FinishedAt: now, Reason: v4.ReasonPortConflict,
			PortsTaken: []v4.BusyPort{{Port: 31000, Protocol: "tcp", Holder: "nc (pid 7)"}}},
	}
}

// A run whose random ports were taken is placed again at once, whatever the restart
// policy, without counting a restart or a crash loop; a fixed port, or too many retries
// in a row, go through the restart policy.
func TestPlanRestartPortConflict(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 1, 0, time.UTC)
	never := &v4.RestartPolicy{Policy: v4.RestartNever}
	onFailure := &v4.RestartPolicy{Policy: v4.RestartOnFailure}

	got := planRestart(never, portConflictRun(true, 1), now)
	if !got.restart || !got.at.Equal(now) || got.attempt != 2 || got.crashLoops != 3 || got.portRetries != 2 || got.crashLoop {
		t.Errorf("random port: %+v, want a re-placement now keeping reschedTimes 2 and crashLoops 3, port retry 2", got)
	}

	if got := planRestart(never, portConflictRun(false, 0), now); got.restart || got.portRetries != 0 {
		t.Errorf("fixed port under Never: %+v, want no restart", got)
	}
	got = planRestart(onFailure, portConflictRun(false, 0), now)
	if !got.restart || got.portRetries != 0 || got.attempt != 3 || !got.crashLoop {
		t.Errorf("fixed port under OnFailure: %+v, want a restart with the crash-loop wait", got)
	}
	got = planRestart(onFailure, portConflictRun(true, maxPortRetries), now)
	if !got.restart || got.portRetries != 0 || !got.at.After(now) {
		t.Errorf("after %d port retries: %+v, want the restart policy's wait", maxPortRetries, got)
	}
	other := portConflictRun(true, 0)
	other.Status.Reason = ""
	if got := planRestart(never, other, now); got.restart {
		t.Errorf("a failure without the reason: %+v", got)
	}
}

// The replacement is kept off the ports found taken, on the node they were taken on.
func TestTakenPortsOfAnEndedRun(t *testing.T) {
	req := &scheduler.Request{}
	addTakenPorts(req, takenPorts(portConflictRun(true, 0)))
	addTakenPorts(req, takenPorts(portConflictRun(false, 0)))
	addTakenPorts(req, takenPorts(&v4.TaskGroup{Spec: v4.TaskGroupSpec{Node: "n2"}, Status: v4.TaskGroupStatus{Phase: v4.StatusFailed}}))
	if fmt.Sprint(req.TakenPorts) != "map[n1:[31000]]" {
		t.Fatalf("taken ports %v", req.TakenPorts)
	}
}

// An instance whose start found its random port taken gets a new task group at once, on
// another port of the same node, with its restart counts unchanged; the event says why.
func TestPortConflictPlacedAgainOnOtherPorts(t *testing.T) {
	e := newEnv(t, "node-1")
	e.applyDoc(`{"apiVersion":"v4","kind":"process","metadata":{"name":"ported","namespace":"ctl"},"restartPolicy":{"policy":"Never"},
		"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web","ports":[{"name":"http","hostPort":0}],
		"resources":{"limits":{"cpu":"0.5","memory":"64"}}}]}}}}`)
	var first *v4.TaskGroup
	e.eventually("the first run", func() bool {
		tgs := e.taskGroups("ported")
		if len(tgs) == 1 {
			first = tgs[0]
		}
		return first != nil
	})
	if p := first.Spec.Ports; len(p) != 1 || p[0].HostPort != 31000 || !p[0].Random {
		t.Fatalf("first run's ports %+v", p)
	}
	failed := time.Now()
	for range 10 {
		cur, err := testStore.Get(context.Background(), v4.KindTaskGroup, "ctl", first.Metadata.Name)
		if err != nil {
			t.Fatal(err)
		}
		tg := cur.(*v4.TaskGroup)
		tg.Status = v4.TaskGroupStatus{Phase: v4.StatusFailed, Updated: failed, FinishedAt: failed, Reason: v4.ReasonPortConflict,
			Message:    "cannot start: host port 31000/tcp is in use by nc (pid 7)",
			PortsTaken: []v4.BusyPort{{Port: 31000, Protocol: "tcp", Holder: "nc (pid 7)"}}}
		if err = testStore.Update(context.Background(), tg, store.Raw{}); err == nil {
			break
		}
	}
	var next *v4.TaskGroup
	e.eventually("a run on another port", func() bool {
		tgs := e.taskGroups("ported")
		next = nil
		if len(tgs) == 1 && tgs[0].Metadata.Name != first.Metadata.Name {
			next = tgs[0]
		}
		return next != nil
	})
	if took := time.Since(failed); took > crashLoopFloor {
		t.Errorf("re-placed after %s; a port conflict must not wait like a crash", took)
	}
	if p := next.Spec.Ports; len(p) != 1 || p[0].HostPort == 31000 || next.Spec.Node != "node-1" {
		t.Errorf("replacement on %s ports %+v, want another port than 31000", next.Spec.Node, p)
	}
	if s := next.Spec; s.PortRetries != 1 || s.ReschedTimes != 0 || s.CrashLoops != 0 || len(s.RecentRestarts) != 0 {
		t.Errorf("replacement counts: portRetries %d reschedTimes %d crashLoops %d recent %v", s.PortRetries, s.ReschedTimes, s.CrashLoops, s.RecentRestarts)
	}
	isConflict := func(ev v4.Event) bool {
		return ev.Reason == "PortConflict" && strings.Contains(ev.Message, "31000/tcp held by nc (pid 7)")
	}
	evs := eventsEventually(t, "the PortConflict event", v4.EventFilter{Namespace: "ctl", Name: "ported"}, func(evs []v4.Event) bool {
		return slices.ContainsFunc(evs, isConflict)
	})
	if !slices.ContainsFunc(evs, isConflict) {
		t.Errorf("no PortConflict event naming the port in %+v", evs)
	}
}
