package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

func newDSEnv(t *testing.T, nodes ...string) *env {
	t.Helper()
	return startEnv(t, func(e *env) runner {
		return NewDaemonsetController(testStore, e.feed, e.opts())
	}, nodes...)
}

// applyDS creates or updates daemonset "agent"; cmd is its process's startCmd (change it
// to change the template), extra is more top-level JSON (restartPolicy, constraint).
func (e *env) applyDS(cmd, extra string) {
	e.t.Helper()
	if extra != "" {
		extra = "," + extra
	}
	doc := fmt.Sprintf(`{"apiVersion":"v4","kind":"daemonset","metadata":{"name":"agent","namespace":"ctl"}%s,
		"spec":{"template":{"spec":{"processes":[{"procName":"agent","startCmd":%q,"resources":{"limits":{"cpu":"1","memory":"64"}}}]}}}}`, extra, cmd)
	docs, err := v4.Parse([]byte(doc))
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := testStore.Apply(context.Background(), docs); err != nil {
		e.t.Fatal(err)
	}
}

// onNodes returns the daemonset's task groups by node; a node with two (one stopping, one
// new) keeps the newest.
func (e *env) onNodes() map[string]*v4.TaskGroup {
	e.t.Helper()
	out := map[string]*v4.TaskGroup{}
	for _, tg := range e.taskGroups("agent") {
		if old := out[tg.Spec.Node]; old == nil || byRun(old, tg) < 0 {
			out[tg.Spec.Node] = tg
		}
	}
	return out
}

func (e *env) nodesWith(cond func(*v4.TaskGroup) bool) []string {
	var out []string
	for _, tg := range e.taskGroups("agent") {
		if cond(tg) {
			out = append(out, tg.Spec.Node)
		}
	}
	slices.Sort(out)
	return out
}

func anyTG(*v4.TaskGroup) bool { return true }

func (e *env) dsStatus() v4.DaemonsetStatus {
	e.t.Helper()
	ds, err := store.Typed[*v4.Daemonset](testStore, v4.KindDaemonset).Get(context.Background(), "ctl", "agent")
	if err != nil {
		e.t.Fatal(err)
	}
	return ds.Status
}

// setNode changes a node as an operator or the node-lifecycle controller would.
func (e *env) setNode(name string, change func(*v4.Node)) {
	e.t.Helper()
	nodes := store.Typed[*v4.Node](testStore, v4.KindNode)
	for range 10 {
		n, err := nodes.Get(context.Background(), "", name)
		if err != nil {
			e.t.Fatal(err)
		}
		change(n)
		if err := nodes.Update(context.Background(), n, store.Raw{}); err == nil {
			return
		}
	}
	e.t.Fatalf("could not change node %s", name)
}

func (e *env) reasons(kind v4.Kind, name string) []string {
	e.t.Helper()
	storetest.FlushEvents(e.t, testStore)
	events, err := testStore.ListEvents(context.Background(), v4.EventFilter{Kind: kind, Namespace: "ctl", Name: name})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range events {
		out = append(out, ev.Reason)
	}
	return out
}

func (e *env) runAll() {
	e.t.Helper()
	for _, tg := range e.taskGroups("agent") {
		if tg.Status.Phase == v4.StatusStaging {
			e.report(tg, v4.StatusRunning, time.Now(), time.Time{})
		}
	}
}

func TestDaemonsetFollowsNodes(t *testing.T) {
	e := newDSEnv(t, "node-1", "node-2")
	e.applyDS("./agent", "")
	e.eventually("one task group per node", func() bool { return slices.Equal(e.nodesWith(anyTG), []string{"node-1", "node-2"}) })
	tgs := e.onNodes()
	if tgs["node-1"].Spec.Index == tgs["node-2"].Spec.Index || tgs["node-1"].Spec.Desired != v4.DesiredRunning {
		t.Errorf("indexes must differ: %+v %+v", tgs["node-1"].Spec, tgs["node-2"].Spec)
	}
	e.runAll()
	e.eventually("Running 2/2", func() bool {
		s := e.dsStatus()
		return s.Phase == v4.AppRunning && s.Desired == 2 && s.Running == 2 && s.UpToDate == 2 && s.Current == 2
	})

	// A node that joins gets one; heartbeats change nothing.
	e.node("node-3")
	e.eventually("a task group on the new node", func() bool { return len(e.onNodes()) == 3 })
	e.setNode("node-1", func(n *v4.Node) { n.Status.LastHeartbeat = time.Now() })
	// A node that is not ready gets nothing until it is.
	e.node("node-4")
	e.setNode("node-4", func(n *v4.Node) { n.Status.Phase = v4.NodeNotReady })
	e.setNode("node-4", func(n *v4.Node) { n.Status.Phase = v4.NodeReady })
	e.eventually("a task group on node-4 once ready", func() bool { return len(e.onNodes()) == 4 })
	if got := e.nodesWith(anyTG); !slices.Equal(got, []string{"node-1", "node-2", "node-3", "node-4"}) {
		t.Fatalf("task groups on %v", got)
	}

	// A deleted node's task group goes at once (no agent to stop it).
	if _, err := testStore.Delete(context.Background(), v4.KindNode, "", "node-2", ""); err != nil {
		t.Fatal(err)
	}
	e.eventually("node-2's task group deleted", func() bool {
		return slices.Equal(e.nodesWith(anyTG), []string{"node-1", "node-3", "node-4"})
	})

	// A lost node keeps its task group, Lost, never replaced nor moved.
	e.runAll()
	e.setNode("node-3", func(n *v4.Node) { n.Status.Phase = v4.NodeLost })
	e.report(e.onNodes()["node-3"], v4.StatusLost, time.Now(), time.Time{})
	e.eventually("Abnormal with node-3 Lost", func() bool {
		s := e.dsStatus()
		return s.Phase == v4.AppAbnormal && s.Desired == 3 && s.Running == 2
	})
	time.Sleep(time.Second)
	if tgs := e.taskGroups("agent"); len(tgs) != 3 || e.onNodes()["node-3"].Status.Phase != v4.StatusLost {
		t.Errorf("a Lost task group must stay as it is: %d task groups", len(tgs))
	}
	if slices.Contains(e.reasons(v4.KindDaemonset, "agent"), "Restarting") {
		t.Error("nothing may restart here")
	}
	for _, r := range []string{"Scheduled", "NodeGone", "InstanceLost", "Status"} {
		if !slices.Contains(e.reasons(v4.KindDaemonset, "agent"), r) {
			t.Errorf("no %s event: %v", r, e.reasons(v4.KindDaemonset, "agent"))
		}
	}
}

func TestDaemonsetRestartsOnItsNode(t *testing.T) {
	e := newDSEnv(t, "node-1", "node-2")
	e.applyDS("./agent", `"restartPolicy":{"interval":1}`) // Always by default
	e.eventually("two", func() bool { return len(e.onNodes()) == 2 })
	e.runAll()
	first := e.onNodes()["node-1"]
	failed := time.Now()
	e.report(first, v4.StatusFailed, failed.Add(-time.Second), failed)
	e.eventually("a replacement on node-1", func() bool {
		tg := e.onNodes()["node-1"]
		return tg != nil && tg.Metadata.Name != first.Metadata.Name
	})
	second := e.onNodes()["node-1"]
	if d := second.Metadata.CreationTimestamp.Sub(failed.Truncate(time.Second)); d < time.Second {
		t.Errorf("replaced %v after the failure, want the 1 s interval", d)
	}
	if second.Spec.Index != first.Spec.Index || second.Spec.ReschedTimes != 1 || len(e.taskGroups("agent")) != 2 {
		t.Errorf("replacement %+v", second.Spec)
	}

	// A disabled node keeps what runs and gets nothing new: its ended task group stays.
	e.setNode("node-2", func(n *v4.Node) { n.Spec.Disabled = true })
	onTwo := e.onNodes()["node-2"]
	e.report(onTwo, v4.StatusFinish, time.Now().Add(-time.Second), time.Now())
	e.eventually("the reason in the status", func() bool { return strings.Contains(e.dsStatus().Message, "node node-2 is disabled") })
	time.Sleep(1500 * time.Millisecond)
	if tg := e.onNodes()["node-2"]; tg == nil || tg.Metadata.Name != onTwo.Metadata.Name {
		t.Fatal("a disabled node lost its ended task group or got a new one")
	}
	// Enabled again: restarted there.
	e.setNode("node-2", func(n *v4.Node) { n.Spec.Disabled = false })
	e.eventually("restarted on node-2", func() bool {
		tg := e.onNodes()["node-2"] // nil between the ended one's removal and its replacement
		return tg != nil && tg.Metadata.Name != onTwo.Metadata.Name && tg.Spec.Index == onTwo.Spec.Index
	})

	// Never: an ended task group stays.
	e.applyDS("./agent", `"restartPolicy":{"policy":"Never"}`)
	e.runAll()
	last := e.onNodes()["node-1"]
	e.report(last, v4.StatusFailed, time.Now().Add(-time.Second), time.Now())
	e.eventually("NotRestarted", func() bool { return strings.Contains(e.dsStatus().Message, "restartPolicy Never") })
	if tg := e.onNodes()["node-1"]; tg == nil || tg.Metadata.Name != last.Metadata.Name {
		t.Error("restartPolicy Never restarted")
	}
}

func TestDaemonsetRollsNodeByNode(t *testing.T) {
	e := newDSEnv(t, "node-1", "node-2", "node-3")
	e.applyDS("./agent", "")
	e.eventually("three", func() bool { return len(e.onNodes()) == 3 })
	e.runAll()
	e.eventually("Running", func() bool { return e.dsStatus().Running == 3 })
	e.applyDS("./agent --v2", "")
	updated := map[string]bool{}
	for len(updated) < 3 {
		var stopping []string
		e.eventually("one node stopping", func() bool {
			stopping = e.nodesWith(func(tg *v4.TaskGroup) bool { return tg.Spec.Desired == v4.DesiredStopped })
			return len(stopping) > 0
		})
		if len(stopping) != 1 || updated[stopping[0]] {
			t.Fatalf("stopping %v after %v were updated", stopping, updated)
		}
		node := stopping[0]
		for _, tg := range e.taskGroups("agent") {
			if tg.Spec.Node == node {
				e.report(tg, v4.StatusFinish, time.Now().Add(-time.Second), time.Now())
			}
		}
		e.eventually("a new task group on "+node, func() bool {
			tg := e.onNodes()[node]
			return tg != nil && tg.Spec.Desired == v4.DesiredRunning && tg.Spec.Template.Spec.Processes[0].StartCmd == "./agent --v2"
		})
		time.Sleep(300 * time.Millisecond)
		if got := e.nodesWith(func(tg *v4.TaskGroup) bool { return tg.Spec.Desired == v4.DesiredStopped }); len(got) != 0 {
			t.Fatalf("%v stopping before the new task group on %s runs", got, node)
		}
		updated[node] = true
		e.runAll()
	}
	e.eventually("Running 3/3 up to date", func() bool {
		s := e.dsStatus()
		return s.Phase == v4.AppRunning && s.Running == 3 && s.UpToDate == 3
	})
	if !slices.Contains(e.reasons(v4.KindDaemonset, "agent"), "Updating") {
		t.Error("no Updating event")
	}
}

func TestDaemonsetPlacementChecksAndDelete(t *testing.T) {
	e := newDSEnv(t, "node-1", "node-2")
	// Registered whole, so the scheduler's snapshot never has them without these.
	e.node("small", func(n *v4.Node) { n.Spec.Allocatable.CPU = 0.5 })
	e.node("tainted", func(n *v4.Node) {
		n.Spec.Taints = []v4.Taint{{Key: "dedicated", Value: "db", Effect: v4.TaintNoSchedule}}
	})
	e.applyDS("./agent", `"constraint":{"intersectionItem":[{"unionData":[{"name":"hostname","operate":"UNLIKE","type":3,"text":{"value":"node-2"}}]}]}`)
	e.eventually("the reason for the small node", func() bool {
		s := e.dsStatus()
		return strings.Contains(s.Message, "small: insufficient cpu") && s.Desired == 2 && s.Current == 1
	})
	if got := e.nodesWith(anyTG); !slices.Equal(got, []string{"node-1"}) {
		t.Fatalf("task groups on %v: a constraint, a taint and a lack of room keep them away", got)
	}
	if !slices.Contains(e.reasons(v4.KindDaemonset, "agent"), "FailedScheduling") {
		t.Error("no FailedScheduling event")
	}
	e.setNode("small", func(n *v4.Node) { n.Spec.Allocatable.CPU = 4 })
	e.eventually("placed once it has room", func() bool { return slices.Equal(e.nodesWith(anyTG), []string{"node-1", "small"}) })
	e.runAll()

	if _, err := testStore.Delete(context.Background(), v4.KindDaemonset, "ctl", "agent", ""); err != nil {
		t.Fatal(err)
	}
	e.eventually("both asked to stop", func() bool {
		return len(e.nodesWith(func(tg *v4.TaskGroup) bool { return tg.Spec.Desired == v4.DesiredStopped })) == 2
	})
	for _, tg := range e.taskGroups("agent") {
		e.report(tg, v4.StatusFinish, time.Now().Add(-time.Second), time.Now())
	}
	e.eventually("none left", func() bool { return len(e.taskGroups("agent")) == 0 })
}

func TestNodeShapeIgnoresHeartbeats(t *testing.T) {
	base := func() *v4.Node {
		return &v4.Node{Metadata: v4.ObjectMeta{Name: "n", Labels: map[string]string{"zone": "a"}},
			Spec: v4.NodeSpec{Hostname: "n", Allocatable: v4.NodeResources{CPU: 4}}, Status: v4.NodeStatus{Phase: v4.NodeReady}}
	}
	tests := []struct {
		name   string
		change func(*v4.Node)
		same   bool
	}{
		{"heartbeat", func(n *v4.Node) { n.Status.LastHeartbeat = time.Now() }, true},
		{"agent address", func(n *v4.Node) { n.Status.AgentAddress, n.Status.AgentVersion = "127.0.0.1:1", "v2" }, true},
		{"resource version", func(n *v4.Node) { n.Metadata.ResourceVersion = "9" }, true},
		{"disabled", func(n *v4.Node) { n.Spec.Disabled = true }, false},
		{"lost", func(n *v4.Node) { n.Status.Phase = v4.NodeLost }, false},
		{"taint", func(n *v4.Node) { n.Spec.Taints = []v4.Taint{{Key: "k", Value: "v", Effect: v4.TaintNoSchedule}} }, false},
		{"label", func(n *v4.Node) { n.Metadata.Labels["zone"] = "b" }, false},
		{"room", func(n *v4.Node) { n.Spec.Allocatable.CPU = 8 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := base()
			tt.change(n)
			if got := nodeShape(n) == nodeShape(base()); got != tt.same {
				t.Errorf("same shape = %v, want %v", got, tt.same)
			}
		})
	}
}

// A daemon that keeps crashing on its node restarts there each time and gives one
// RestartStorm warning, as an application's instance does.
func TestDaemonsetCrashLoopStaysOnItsNode(t *testing.T) {
	e := newDSEnv(t, "node-1", "node-2")
	e.applyDS("./agent", "")
	for run := range stormRestarts + 2 {
		var cur *v4.TaskGroup
		e.eventually(fmt.Sprintf("run %d on node-1", run), func() bool {
			cur = e.onNodes()["node-1"]
			return cur != nil && cur.Spec.ReschedTimes == run && len(e.taskGroups("agent")) == 2
		})
		e.report(cur, v4.StatusFailed, time.Now().Add(-time.Second), time.Now())
	}
	e.eventually("the last restart", func() bool {
		tg := e.onNodes()["node-1"]
		return tg != nil && tg.Spec.ReschedTimes == stormRestarts+2
	})
	if got := e.nodesWith(anyTG); !slices.Equal(got, []string{"node-1", "node-2"}) {
		t.Errorf("task groups on %v", got)
	}
	storms := 0
	for _, r := range e.reasons(v4.KindDaemonset, "agent") {
		if r == "RestartStorm" {
			storms++
		}
	}
	if storms != 1 {
		t.Errorf("%d RestartStorm events, want 1", storms)
	}
}
