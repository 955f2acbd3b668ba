package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/workflow/engine"
)

const wfTwoParallel = `{"entrypoint":"main","onExit":"exit","templates":[
 {"name":"main","steps":[[{"name":"a","template":"work"},{"name":"b","template":"work"}],[{"name":"c","template":"work"}]]},
 {"name":"work","process":{"procName":"w","startCmd":"./w"}},
 {"name":"exit","process":{"procName":"x","startCmd":"./x"}}]}`

// setShutdown sets spec.shutdown as the stop and terminate actions do.
func (e *env) setShutdown(v string) {
	e.t.Helper()
	for range 10 {
		w := e.wf()
		w.Spec.Shutdown = v
		if err := testStore.Update(context.Background(), w, store.Raw{}); err == nil {
			return
		}
	}
	e.t.Fatal("could not set spec.shutdown")
}

// desired is the desired state of a task group as stored.
func desired(t *testing.T, tg *v4.TaskGroup) string {
	o, err := testStore.Get(context.Background(), v4.KindTaskGroup, tg.Metadata.Namespace, tg.Metadata.Name)
	if err != nil {
		t.Fatal(err)
	}
	return o.(*v4.TaskGroup).Spec.Desired
}

// Stop: the running steps are stopped, nothing new starts, the exit handler runs and
// the workflow fails "Stopped". Terminate: the same without the exit handler.
func TestWorkflowStopAndTerminate(t *testing.T) {
	for _, tc := range []struct {
		shutdown, msg string
		exit          bool
	}{{v4.ShutdownStop, "Stopped", true}, {v4.ShutdownTerminate, "Terminated", false}} {
		t.Run(tc.shutdown, func(t *testing.T) {
			e := newWfEnv(t)
			e.applyWf(wfTwoParallel)
			run := e.waitSteps("wf[0].a", "wf[0].b")
			for _, tg := range run {
				e.report(tg, v4.StatusRunning, time.Now(), time.Time{})
			}
			e.setShutdown(tc.shutdown)
			e.eventually("the running steps asked to stop", func() bool {
				return desired(t, run["wf[0].a"]) == v4.DesiredStopped && desired(t, run["wf[0].b"]) == v4.DesiredStopped
			})
			if tc.exit {
				e.finish(e.waitSteps("wf.onExit")["wf.onExit"], 0)
			}
			st := e.waitWf("Failed", func(s v4.WorkflowStatus) bool { return s.Phase == v4.WfFailed })
			if st.Message != tc.msg {
				t.Errorf("message %q, want %q", st.Message, tc.msg)
			}
			for _, n := range st.Nodes {
				if n.Name == "wf[1].c" || !tc.exit && n.Name == "wf.onExit" {
					t.Errorf("%s was started", n.Name)
				}
			}
		})
	}
}

// retryAsRoute does what the retry action does to a failed workflow's status.
func (e *env) retryAsRoute() {
	e.t.Helper()
	for range 10 {
		w := e.wf()
		nodes := w.Status.Nodes
		if w.Status.NodesOffloaded {
			nodes, _ = testStore.WorkflowNodes(context.Background(), "ctl", "wf", w.Status.UID)
		}
		keep, removed := engine.RetryNodes("wf", nodes)
		if w.Status.NodesOffloaded {
			if err := testStore.DeleteWorkflowNodeIDs(context.Background(), "ctl", "wf", w.Status.UID, removed); err != nil {
				e.t.Fatal(err)
			}
			var all []v4.WfNodeStatus
			for _, n := range keep {
				all = append(all, n)
			}
			if err := testStore.PutWorkflowNodes(context.Background(), "ctl", "wf", w.Status.UID, all); err != nil {
				e.t.Fatal(err)
			}
		} else {
			w.Status.Nodes = keep
		}
		w.Status.Phase, w.Status.Message, w.Status.FinishedAt = v4.WfRunning, "", time.Time{}
		w.Status.RetryCount++
		if err := testStore.Update(context.Background(), w, store.Raw{}); err == nil {
			return
		}
	}
	e.t.Fatal("could not retry")
}

// A retry runs the failed step again and keeps the succeeded one with its outputs;
// the retried step gets a task group of its own beside the failed one's record.
func TestWorkflowRetryReusesSucceeded(t *testing.T) {
	e := newWfEnv(t)
	e.applyWf(keepSteps(wfDiamond)) // the task groups are counted at the end
	e.finish(e.waitSteps("wf.A")["wf.A"], 0, "x=kept")
	bc := e.waitSteps("wf.B", "wf.C")
	e.finish(bc["wf.C"], 0)
	e.finish(bc["wf.B"], 1)
	e.waitWf("Failed", func(s v4.WorkflowStatus) bool { return s.Phase == v4.WfFailed })
	e.retryAsRoute()
	b2 := e.waitSteps("wf.B")["wf.B"]
	if b2.Metadata.Name == bc["wf.B"].Metadata.Name || !strings.HasSuffix(b2.Metadata.Name, ".1") {
		t.Errorf("the retried step's task group %s (before %s)", b2.Metadata.Name, bc["wf.B"].Metadata.Name)
	}
	if cmd := b2.Spec.Template.Spec.Processes[0].StartCmd; cmd != "./use kept" {
		t.Errorf("the retried step runs %q: A's kept output not passed", cmd)
	}
	e.finish(b2, 0)
	e.finish(e.waitSteps("wf.D")["wf.D"], 0)
	e.waitWf("Succeeded", func(s v4.WorkflowStatus) bool { return s.Phase == v4.WfSucceeded })
	if n := len(e.wfTaskGroups()); n != 5 {
		t.Errorf("%d task groups, want A, C, B twice and D: A and C were not run again", n)
	}
}

// Deleting a workflow stops its running steps and removes its task groups.
func TestWorkflowDeletion(t *testing.T) {
	e := newWfEnv(t)
	e.applyWf(wfTwoParallel)
	run := e.waitSteps("wf[0].a", "wf[0].b")
	e.report(run["wf[0].a"], v4.StatusRunning, time.Now(), time.Time{})
	if _, err := testStore.Delete(context.Background(), v4.KindWorkflow, "ctl", "wf", ""); err != nil {
		t.Fatal(err)
	}
	e.eventually("the running step asked to stop", func() bool { return desired(t, run["wf[0].a"]) == v4.DesiredStopped })
	e.report(run["wf[0].a"], v4.StatusKilled, time.Now(), time.Now())
	e.eventually("every task group removed", func() bool { return len(e.wfTaskGroups()) == 0 })
}

// A second controller (a new leader) adopts the steps the first started: no step gets
// a second task group.
func TestWorkflowAdoption(t *testing.T) {
	e := newWfEnv(t)
	e.applyWf(keepSteps(wfTwoParallel))
	run := e.waitSteps("wf[0].a", "wf[0].b")
	ctx, cancel := context.WithCancel(context.Background())
	c2 := NewWorkflowController(testStore, e.feed, e.opts())
	done := make(chan struct{})
	go func() { _ = c2.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	// Both run now, as two leaders overlapping would: still one task group per step.
	e.finish(run["wf[0].a"], 0)
	e.finish(run["wf[0].b"], 0)
	e.finish(e.waitSteps("wf[1].c")["wf[1].c"], 0)
	e.finish(e.waitSteps("wf.onExit")["wf.onExit"], 0)
	e.waitWf("Succeeded", func(s v4.WorkflowStatus) bool { return s.Phase == v4.WfSucceeded })
	if n := len(e.wfTaskGroups()); n != 4 {
		t.Errorf("%d task groups for 4 steps", n)
	}
}

// Past a size the nodes are kept outside the object, one key per node; the steps go on
// and the workflow finishes with its object small.
func TestWorkflowOffloadsNodes(t *testing.T) {
	e := newWfEnv(t, func(c *WorkflowController) { c.inlineBytes = 2 << 10 })
	items := make([]string, 40)
	for i := range items {
		items[i] = fmt.Sprintf("%q", fmt.Sprint(i))
	}
	e.applyWf(`{"entrypoint":"main","templates":[
	 {"name":"main","steps":[[{"name":"each","template":"work","withItems":[` + strings.Join(items, ",") + `]}]]},
	 {"name":"work","process":{"procName":"w","startCmd":"./w","resources":{"limits":{"cpu":"0.01","memory":"1"}}}}]}`)
	e.eventually("offloaded", func() bool { return e.wf().Status.NodesOffloaded })
	e.eventually("all 40 items started", func() bool { return len(e.steps()) == 40 })
	for _, tg := range e.steps() {
		e.finish(tg, 0)
	}
	st := e.waitWf("Succeeded", func(s v4.WorkflowStatus) bool { return s.Phase == v4.WfSucceeded })
	if len(st.Nodes) != 0 || st.Progress != "40/40" {
		t.Errorf("inline nodes %d, progress %q", len(st.Nodes), st.Progress)
	}
	nodes, err := testStore.WorkflowNodes(context.Background(), "ctl", "wf", st.UID)
	if err != nil || len(nodes) != 43 { // wf, its group, the loop and 40 items
		t.Errorf("%d offloaded nodes (%v)", len(nodes), err)
	}
	b, _ := json.Marshal(e.wf())
	if len(b) > 4<<10 {
		t.Errorf("the object is %d bytes with its nodes offloaded", len(b))
	}
}

// With a limit of one running workflow per namespace, a second waits Pending with a
// message and starts once the first ended.
func TestWorkflowNamespaceLimit(t *testing.T) {
	e := startEnv(t, func(e *env) runner {
		o := e.opts()
		o.WorkflowsPerNamespace = 1
		return NewWorkflowController(testStore, e.feed, o)
	}, "n1")
	one := `{"entrypoint":"t","templates":[{"name":"t","process":{"procName":"w","startCmd":"./w"}}]}`
	e.applyWf(one)
	first := e.waitSteps("wf")["wf"]
	e.applyWfNamed("second", one)
	e.eventually("the second waits", func() bool {
		st := e.wfNamed("second").Status
		return st.Phase == v4.WfPending && strings.Contains(st.Message, "limit")
	})
	if len(e.steps()) != 1 {
		t.Fatal("the second started a step")
	}
	e.finish(first, 0)
	e.eventually("the second runs", func() bool { return e.wfNamed("second").Status.Phase == v4.WfRunning })
}

// A workflow deleted and created again at once under its name: the new one's pass
// removes the old one's steps and runs its own.
func TestWorkflowRecreated(t *testing.T) {
	e := newWfEnv(t)
	one := `{"entrypoint":"t","templates":[{"name":"t","process":{"procName":"w","startCmd":"./w"}}]}`
	e.applyWf(one)
	old := e.waitSteps("wf")["wf"]
	e.report(old, v4.StatusRunning, time.Now(), time.Time{})
	if _, err := testStore.Delete(context.Background(), v4.KindWorkflow, "ctl", "wf", ""); err != nil {
		t.Fatal(err)
	}
	e.applyWf(one)
	e.eventually("the old step asked to stop", func() bool { return desired(t, old) == v4.DesiredStopped })
	e.report(old, v4.StatusKilled, time.Now(), time.Now())
	e.eventually("only the new step left", func() bool {
		tgs := e.wfTaskGroups()
		return len(tgs) == 1 && tgs[0].Metadata.Name != old.Metadata.Name
	})
}

// A step past its template's activeDeadlineSeconds is asked to stop and fails.
func TestWorkflowStepDeadline(t *testing.T) {
	e := newWfEnv(t)
	e.applyWf(`{"entrypoint":"t","templates":[{"name":"t","activeDeadlineSeconds":1,"process":{"procName":"w","startCmd":"./w"}}]}`)
	step := e.waitSteps("wf")["wf"]
	e.report(step, v4.StatusRunning, time.Now(), time.Time{})
	e.eventually("the step asked to stop", func() bool { return desired(t, step) == v4.DesiredStopped })
	st := e.waitWf("Failed", func(s v4.WorkflowStatus) bool { return s.Phase == v4.WfFailed })
	if !strings.Contains(st.Message, "activeDeadlineSeconds") {
		t.Errorf("message %q", st.Message)
	}
}

// A step with outputs waits for the agent's collection: its outputs come with it; a
// collection that never comes fails the step with an error.
func TestWorkflowStepCollection(t *testing.T) {
	e := newWfEnv(t, func(c *WorkflowController) { c.collectWait = 300 * time.Millisecond })
	e.applyWf(`{"entrypoint":"main","templates":[
	 {"name":"main","steps":[[{"name":"s","template":"s"}]]},
	 {"name":"s","script":{"command":["sh"],"source":"echo hi"}}]}`)
	step := e.waitSteps("wf[0].s")["wf[0].s"]
	if step.Spec.Step == nil || !step.Spec.Step.Result {
		t.Fatalf("a script's step asks for no result: %+v", step.Spec.Step)
	}
	e.report(step, v4.StatusFinish, time.Now().Add(-time.Second), time.Now()) // no status.step: an agent without step I/O
	st := e.waitWf("Error", func(s v4.WorkflowStatus) bool { return v4.WfPhaseFinished(s.Phase) })
	if st.Phase != v4.WfFailed || !strings.Contains(st.Message, "did not report") {
		t.Errorf("%s %q", st.Phase, st.Message)
	}
}
