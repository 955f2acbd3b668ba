package controller

import (
	"slices"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
)

func TestUnschedulableSetsPendingAndPlacingClearsIt(t *testing.T) {
	e := newEnv(t) // no nodes
	e.apply("web", 2, `{"policy":"Always"}`)
	e.eventually("pending in the status", func() bool { return e.status("web").Pending != nil })
	p := e.status("web").Pending
	if p.Reason != v4.PendingUnschedulable || p.Instances != 2 || !slices.Equal(p.Indexes, []int{0, 1}) ||
		p.Message != "no nodes" || p.Since.IsZero() || p.Node != "" {
		t.Fatalf("pending %+v, want Unschedulable of instances 0 and 1, no nodes, with its since", p)
	}
	e.node("late")
	e.eventually("placed once a node comes", func() bool { return len(e.taskGroups("web")) == 2 })
	e.eventually("pending cleared", func() bool { return e.status("web").Pending == nil })
}

func TestHostRetainTimeWaitSetsPending(t *testing.T) {
	e := newEnv(t, "node-a", "node-b")
	e.apply("sticky", 1, `{"policy":"Always","hostRetainTime":60}`)
	e.eventually("placed", func() bool { return len(e.taskGroups("sticky")) == 1 })
	first := e.taskGroups("sticky")[0]
	e.report(first, v4.StatusRunning, time.Now(), time.Time{})
	e.setNodePhase(first.Spec.Node, v4.NodeLost)
	e.report(first, v4.StatusFailed, time.Now().Add(-time.Second), time.Now())
	e.eventually("the wait in pending", func() bool { return e.status("sticky").Pending != nil })
	p := e.status("sticky").Pending
	if p.Reason != v4.PendingWaitingForHost || p.Node != first.Spec.Node || !slices.Equal(p.Indexes, []int{0}) ||
		p.Instances != 1 || p.Until.IsZero() || p.Check != scheduler.CheckNode {
		t.Fatalf("pending %+v, want instance 0 waiting for %s until a time, rejected by the node check", p, first.Spec.Node)
	}
	e.setNodePhase(first.Spec.Node, v4.NodeReady)
	e.eventually("pending cleared once the node takes it", func() bool { return e.status("sticky").Pending == nil })
}

// A pass that finds the same wait as the stored status keeps its since: the statuses are
// equal and updateStatus writes nothing.
func TestPendingUnchangedWritesNothing(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	reason := &scheduler.Reason{Nodes: 3, Checks: []scheduler.CheckCount{{Check: "insufficient cpu", Nodes: 3}}}
	w := &v4.Workload{Spec: v4.WorkloadSpec{Instance: 1}}
	newPass := func(now time.Time) *pass {
		r := &pass{w: w, now: now}
		r.message = "1 of 1 instances cannot be placed: " + reason.String()
		r.unschedulable(scheduler.Result{Unplaced: []int{0}, Reason: reason})
		return r
	}
	first := newPass(since).status()
	if first.Pending == nil || !first.Pending.Since.Equal(since) || first.Pending.Check != scheduler.CheckResources ||
		first.Pending.Message != "3 nodes: 3 insufficient cpu" {
		t.Fatalf("first pass: pending %+v", first.Pending)
	}
	w.Status = first
	again := newPass(since.Add(time.Minute)).status()
	if !again.Equal(first) || !again.Pending.Since.Equal(since) {
		t.Fatalf("an unchanged wait must keep its status: %+v, was %+v", again.Pending, first.Pending)
	}
	// Another reason starts a new since.
	r := &pass{w: w, now: since.Add(2 * time.Minute)}
	r.waitingForHost(0, "node-a", since.Add(time.Hour), scheduler.Result{Reason: reason})
	if p := r.status().Pending; p.Reason != v4.PendingWaitingForHost || !p.Since.Equal(since.Add(2*time.Minute)) {
		t.Fatalf("a new reason: pending %+v", p)
	}
	// No wait: none.
	if p := (&pass{w: w, now: since}).status().Pending; p != nil {
		t.Fatalf("no wait: pending %+v", p)
	}
}

func TestUnschedulableListsAtMostMaxPendingListed(t *testing.T) {
	unplaced := make([]int, 100)
	for i := range unplaced {
		unplaced[i] = 99 - i
	}
	r := &pass{w: &v4.Workload{}}
	r.unschedulable(scheduler.Result{Unplaced: unplaced, Reason: &scheduler.Reason{}})
	if p := r.pending; p.Instances != 100 || len(p.Indexes) != v4.MaxPendingListed || p.Indexes[0] != 0 || p.Check != "" {
		t.Fatalf("pending %+v", p)
	}
}
