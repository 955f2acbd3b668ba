package controller

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

// startDrain runs a drain controller next to the env's application controller.
func (e *env) startDrain() {
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan struct{})
	c := NewDrainController(testStore, e.feed, e.opts())
	go func() { c.Run(ctx); close(done) }()
	e.t.Cleanup(func() { cancel(); <-done })
}

// fakeAgents plays every node's agent until the test ends: task groups start Running at
// once and stop when asked. It records the most replacements ever starting at once.
func (e *env) fakeAgents() (maxPending func() int) {
	ctx, cancel := context.WithCancel(e.ctx)
	var mu sync.Mutex
	most := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			objs, _, err := testStore.List(ctx, v4.KindTaskGroup, "ctl")
			if err != nil {
				continue
			}
			pending := 0
			for _, o := range objs {
				tg := o.(*v4.TaskGroup)
				switch {
				case tg.Spec.Desired == v4.DesiredStopped && !v4.Terminal(tg.Status.Phase):
					e.reportQuiet(tg, v4.StatusFinish)
				case tg.Spec.Desired != v4.DesiredStopped && tg.Status.Phase == v4.StatusStaging:
					if tg.Metadata.Annotations[v4.MovedFromAnnotation] != "" {
						pending++
					}
					e.reportQuiet(tg, v4.StatusRunning)
				}
			}
			mu.Lock()
			most = max(most, pending)
			mu.Unlock()
			sleep(ctx, 100*time.Millisecond)
		}
	}()
	e.t.Cleanup(func() { cancel(); <-done })
	return func() int { mu.Lock(); defer mu.Unlock(); return most }
}

// reportQuiet writes a status if the task group is still there (the fake agent races
// with the controllers by design).
func (e *env) reportQuiet(tg *v4.TaskGroup, phase string) {
	tg.Status = v4.TaskGroupStatus{Phase: phase, Updated: time.Now(), StartedAt: time.Now().Add(-time.Second)}
	if phase == v4.StatusFinish {
		tg.Status.FinishedAt = time.Now()
	}
	_ = testStore.Update(context.Background(), tg, store.Raw{})
}

// drain asks for node to be drained as the server does.
func (e *env) drain(node string, force bool) {
	e.t.Helper()
	nodes := store.Typed[*v4.Node](testStore, v4.KindNode)
	n, err := nodes.Get(e.ctx, "", node)
	if err != nil {
		e.t.Fatal(err)
	}
	mode := v4.DrainNormal
	if force {
		mode = v4.DrainForce
	}
	n.Spec.Disabled = true
	n.Metadata.Annotations = map[string]string{v4.DrainAnnotation: mode}
	if err := testStore.BeginOperation(e.ctx, "", node, v4.Operation{Type: v4.OpDrain, Kind: v4.KindNode, Name: node}); err != nil {
		e.t.Fatal(err)
	}
	if err := nodes.Update(e.ctx, n, store.Raw{}); err != nil {
		e.t.Fatal(err)
	}
}

// onNode lists the names of the wanted task groups of owner on node.
func (e *env) onNode(owner, node string) []string {
	var out []string
	for _, tg := range e.taskGroups(owner) {
		if tg.Spec.Node == node && tg.Spec.Desired != v4.DesiredStopped {
			out = append(out, tg.Metadata.Name)
		}
	}
	return out
}

func (e *env) nodeEvents(node string) []string {
	storetest.FlushEvents(e.t, testStore)
	events, _ := testStore.ListEvents(e.ctx, v4.EventFilter{Kind: v4.KindNode, Name: node})
	var out []string
	for _, ev := range events {
		out = append(out, ev.Reason+": "+ev.Message)
	}
	return out
}

func TestDrainMovesOneAtATimeAndLeavesStateful(t *testing.T) {
	e := newEnv(t, "node-1", "node-2")
	e.startDrain()
	maxPending := e.fakeAgents()
	e.apply("web", 4, `{"policy":"Always"}`)
	e.applyDoc(statefulDoc("db"))
	e.eventually("web running", func() bool { return e.status("web").Running == 4 })
	e.eventually("db running", func() bool { return e.status("db").Running == 1 })
	// Put db on node-1 whatever the scheduler chose, so the drain meets it.
	if db := e.taskGroups("db")[0]; db.Spec.Node != "node-1" {
		if _, _, err := RequestMove(e.ctx, testStore, e.feed, "ctl", db.Metadata.Name, v4.MoveRequest{Node: "node-1", Force: true}, ""); err != nil {
			t.Fatal(err)
		}
		e.eventually("db on node-1", func() bool { return len(e.onNode("db", "node-1")) == 1 && len(e.taskGroups("db")) == 1 })
	}
	if len(e.onNode("web", "node-1")) == 0 {
		t.Fatal("spread put no web instance on node-1")
	}
	e.drain("node-1", false)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("events of node-1:\n%s", strings.Join(e.nodeEvents("node-1"), "\n"))
			for _, tg := range append(e.taskGroups("web"), e.taskGroups("db")...) {
				t.Logf("%s on %s: %s %s %v", tg.Metadata.Name, tg.Spec.Node, tg.Status.Phase, tg.Spec.Desired, tg.Metadata.Annotations)
			}
		}
	})
	e.eventually("Drained", func() bool {
		return slices.ContainsFunc(e.nodeEvents("node-1"), func(s string) bool { return strings.HasPrefix(s, "Drained") })
	})
	if got := e.onNode("web", "node-1"); len(got) != 0 {
		t.Errorf("web left on node-1: %v", got)
	}
	if got := e.onNode("web", "node-2"); len(got) != 4 {
		t.Errorf("web on node-2: %v, want 4", got)
	}
	if got := e.onNode("db", "node-1"); len(got) != 1 {
		t.Errorf("the stateful db must stay on node-1, got %v", got)
	}
	if maxPending() > 1 {
		t.Errorf("%d replacements started at once, want one at a time", maxPending())
	}
	events := strings.Join(e.nodeEvents("node-1"), "\n")
	if !strings.Contains(events, "DrainSkipped") || !strings.Contains(events, "is stateful") {
		t.Errorf("no event says the stateful instance stays:\n%s", events)
	}
	n, _ := store.Typed[*v4.Node](testStore, v4.KindNode).Get(e.ctx, "", "node-1")
	if _, ok := n.Metadata.Annotations[v4.DrainAnnotation]; ok || !n.Spec.Disabled {
		t.Errorf("after the drain: annotations %v disabled %v, want no drain annotation and still disabled", n.Metadata.Annotations, n.Spec.Disabled)
	}
	if op, _ := testStore.Operation(e.ctx, v4.KindNode, "", "node-1"); op != nil {
		t.Errorf("drain operation left: %+v", op)
	}
	// Forced, the stateful instance goes too.
	e.drain("node-1", true)
	e.eventually("db moved", func() bool { return len(e.onNode("db", "node-2")) == 1 && len(e.onNode("db", "node-1")) == 0 })
	e.eventually("drain ended", func() bool {
		op, _ := testStore.Operation(e.ctx, v4.KindNode, "", "node-1")
		return op == nil
	})
}

func TestEnablingANodeCancelsItsDrain(t *testing.T) {
	e := newEnv(t, "node-1") // nowhere to go: the drain waits
	e.startDrain()
	e.fakeAgents()
	e.apply("web", 1, `{"policy":"Always"}`)
	e.eventually("web running", func() bool { return e.status("web").Running == 1 })
	e.drain("node-1", false)
	e.eventually("DrainBlocked", func() bool {
		return slices.ContainsFunc(e.nodeEvents("node-1"), func(s string) bool {
			return strings.HasPrefix(s, "DrainBlocked") && strings.Contains(s, "no node other than node-1")
		})
	})
	nodes := store.Typed[*v4.Node](testStore, v4.KindNode)
	n, _ := nodes.Get(e.ctx, "", "node-1")
	n.Spec.Disabled = false
	if err := nodes.Update(e.ctx, n, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("cancelled", func() bool {
		op, _ := testStore.Operation(e.ctx, v4.KindNode, "", "node-1")
		return op == nil && slices.ContainsFunc(e.nodeEvents("node-1"), func(s string) bool { return strings.HasPrefix(s, "DrainCancelled") })
	})
	if got := e.onNode("web", "node-1"); len(got) != 1 {
		t.Errorf("web %v, want it still on node-1", got)
	}
}

// A drain recorded in the store before this leader's term (the previous leader died) is
// carried on: the controller finds it from its first list.
func TestDrainStartedByAnEarlierLeaderIsCarriedOn(t *testing.T) {
	e := newEnv(t, "node-1", "node-2")
	e.fakeAgents()
	e.apply("web", 2, `{"policy":"Always"}`)
	e.eventually("web running", func() bool { return e.status("web").Running == 2 })
	e.drain("node-1", false)
	e.startDrain()
	e.eventually("Drained", func() bool {
		return slices.ContainsFunc(e.nodeEvents("node-1"), func(s string) bool { return strings.HasPrefix(s, "Drained") })
	})
	if got := e.onNode("web", "node-1"); len(got) != 0 {
		t.Errorf("web left on node-1: %v", got)
	}
}
