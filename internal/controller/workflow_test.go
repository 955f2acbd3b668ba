package controller

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// newWfEnv runs the workflow controller, and the application controller beside it as a
// leader does: it must leave the steps' task groups alone.
func newWfEnv(t *testing.T, change ...func(*WorkflowController)) *env {
	t.Helper()
	return startEnv(t, func(e *env) runner {
		c := NewWorkflowController(testStore, e.feed, e.opts())
		for _, f := range change {
			f(c)
		}
		return both{c, NewAppController(testStore, e.feed, e.opts())}
	}, "n1")
}

// applyWf creates or updates workflow "wf" in ctl with the given spec (JSON).
func (e *env) applyWf(spec string) {
	e.t.Helper()
	e.applyWfNamed("wf", spec)
}

func (e *env) applyWfNamed(name, spec string) {
	e.t.Helper()
	doc := fmt.Sprintf(`{"apiVersion":"v4","kind":"workflow","metadata":{"name":%q,"namespace":"ctl"},"spec":%s}`, name, spec)
	docs, err := v4.Parse([]byte(doc))
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := testStore.Apply(context.Background(), docs); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) wf() *v4.Workflow {
	e.t.Helper()
	return e.wfNamed("wf")
}

func (e *env) wfNamed(name string) *v4.Workflow {
	e.t.Helper()
	w, err := store.Typed[*v4.Workflow](testStore, v4.KindWorkflow).Get(context.Background(), "ctl", name)
	if err != nil {
		e.t.Fatal(err)
	}
	return w
}

func (e *env) waitWf(what string, ok func(v4.WorkflowStatus) bool) v4.WorkflowStatus {
	e.t.Helper()
	var st v4.WorkflowStatus
	e.eventually(what, func() bool { st = e.wf().Status; return ok(st) })
	return st
}

// steps are the workflow's task groups not ended, by node name.
func (e *env) steps() map[string]*v4.TaskGroup {
	out := map[string]*v4.TaskGroup{}
	for _, tg := range e.listTaskGroups("ctl", func(tg *v4.TaskGroup) bool {
		return tg.Spec.Owner.Kind == v4.KindWorkflow && activeRun(tg) && tg.Spec.Desired != v4.DesiredStopped
	}) {
		out[e.nodeName(tg)] = tg
	}
	return out
}

// nodeName is the name of the node a step's task group runs.
func (e *env) nodeName(tg *v4.TaskGroup) string {
	w, err := store.Typed[*v4.Workflow](testStore, v4.KindWorkflow).Get(context.Background(), "ctl", tg.Spec.Owner.Name)
	if err != nil {
		return "?" + tg.Metadata.Name
	}
	nodes := w.Status.Nodes
	if w.Status.NodesOffloaded {
		nodes, _ = testStore.WorkflowNodes(context.Background(), "ctl", w.Metadata.Name, w.Status.UID)
	}
	if tg.Spec.Step != nil {
		if n, ok := nodes[tg.Spec.Step.NodeID]; ok {
			return n.Name
		}
	}
	return "?" + tg.Metadata.Name
}

// waitSteps waits until exactly the named steps run, and returns their task groups.
func (e *env) waitSteps(names ...string) map[string]*v4.TaskGroup {
	e.t.Helper()
	sort.Strings(names)
	var got map[string]*v4.TaskGroup
	var have []string
	e.eventually(fmt.Sprintf("steps %v", names), func() bool {
		got = e.steps()
		have = have[:0]
		for n := range got {
			have = append(have, n)
		}
		sort.Strings(have)
		return slices.Equal(have, names)
	})
	return got
}

// finish reports a step ended as its agent would: the main task's exit, and what the
// agent collected (params: name=value).
func (e *env) finish(tg *v4.TaskGroup, code int, params ...string) {
	e.t.Helper()
	phase := v4.StatusFinish
	if code != 0 {
		phase = v4.StatusFailed
	}
	res := &v4.StepResult{Collected: true, ExitCode: code}
	for _, p := range params {
		k, v, _ := strings.Cut(p, "=")
		res.Parameters = append(res.Parameters, v4.WfParameter{Name: k, Value: &v})
	}
	now := time.Now().UTC()
	e.setStatus(tg, v4.TaskGroupStatus{Phase: phase, Updated: now, StartedAt: now.Add(-time.Second), FinishedAt: now, Step: res,
		Tasks: []v4.TaskStatus{{Name: tg.Spec.Step.Main, Status: phase, Info: v4.ContainerInfo{ExitCode: code}}}})
}

func (e *env) wfTaskGroups() []*v4.TaskGroup {
	return e.listTaskGroups("ctl", func(tg *v4.TaskGroup) bool { return tg.Spec.Owner.Kind == v4.KindWorkflow })
}

const wfDiamond = `{"entrypoint":"main","templates":[
 {"name":"main","dag":{"tasks":[
  {"name":"A","template":"gen"},
  {"name":"B","template":"use","dependencies":["A"],"arguments":{"parameters":[{"name":"v","value":"{{tasks.A.outputs.parameters.x}}"}]}},
  {"name":"C","template":"use","dependencies":["A"],"arguments":{"parameters":[{"name":"v","value":"c"}]}},
  {"name":"D","template":"use","dependencies":["B","C"],"arguments":{"parameters":[{"name":"v","value":"d"}]}}]}},
 {"name":"gen","outputs":{"parameters":[{"name":"x","valueFrom":{"path":"/tmp/x"}}]},
  "process":{"procName":"gen","startCmd":"./gen","resources":{"limits":{"cpu":"0.1","memory":"16"}}}},
 {"name":"use","inputs":{"parameters":[{"name":"v"}]},
  "process":{"procName":"use","startCmd":"./use {{inputs.parameters.v}}","resources":{"limits":{"cpu":"0.1","memory":"16"}}}}]}`

// A DAG runs in dependency order; a step's output parameter reaches the steps after
// it; each step is a task group with the StepIO the agent follows.
func TestWorkflowDAG(t *testing.T) {
	e := newWfEnv(t)
	e.applyWf(wfDiamond)
	a := e.waitSteps("wf.A")["wf.A"]
	io := a.Spec.Step
	w := e.wf()
	if io == nil || io.Workflow != "wf" || len(io.Parameters) != 1 || io.Parameters[0].Path != "/tmp/x" ||
		io.LogsKey != "ctl/wf/"+w.Status.UID+"/"+io.NodeID+"/main-logs" {
		t.Fatalf("step io %+v", io)
	}
	if p := a.Spec.Template.Spec.Processes; len(p) != 1 || p[0].ProcName != "gen" || io.Main != "gen" || a.Spec.Node != "n1" {
		t.Fatalf("pod %+v on %q", p, a.Spec.Node)
	}
	if !strings.HasPrefix(a.Metadata.Name, "wf."+io.NodeID) {
		t.Errorf("task group name %s is not derived from the node ID %s", a.Metadata.Name, io.NodeID)
	}
	e.finish(a, 0, "x=hello")
	bc := e.waitSteps("wf.B", "wf.C")
	if cmd := bc["wf.B"].Spec.Template.Spec.Processes[0].StartCmd; cmd != "./use hello" {
		t.Errorf("B runs %q, want A's output passed", cmd)
	}
	e.finish(bc["wf.B"], 0)
	e.finish(bc["wf.C"], 0)
	e.finish(e.waitSteps("wf.D")["wf.D"], 0)
	st := e.waitWf("Succeeded", func(s v4.WorkflowStatus) bool { return s.Phase == v4.WfSucceeded })
	if st.Progress != "4/4" || st.FinishedAt.IsZero() || st.NodeCounts[v4.WfSucceeded] != 5 {
		t.Errorf("status: progress %q counts %v", st.Progress, st.NodeCounts)
	}
	// The nodes hold the steps' record: their task groups go (podGC's default).
	e.eventually("the steps' task groups deleted", func() bool { return len(e.wfTaskGroups()) == 0 })
	e.eventually("the phase events", func() bool {
		r := e.reasons(v4.KindWorkflow, "wf")
		return slices.Contains(r, "WorkflowRunning") && slices.Contains(r, "WorkflowSucceeded") && slices.Contains(r, "StepSucceeded")
	})
}

// Steps run group after group; a failed step is retried by its retryStrategy, and the
// workflow's exit handler runs once the workflow failed.
func TestWorkflowStepsRetryAndExitHandler(t *testing.T) {
	e := newWfEnv(t)
	e.applyWf(`{"entrypoint":"main","onExit":"exit","templates":[
	 {"name":"main","steps":[[{"name":"one","template":"flaky"}],[{"name":"two","template":"work"}]]},
	 {"name":"flaky","retryStrategy":{"limit":1},"process":{"procName":"f","startCmd":"./f"}},
	 {"name":"work","process":{"procName":"w","startCmd":"./w"}},
	 {"name":"exit","process":{"procName":"x","startCmd":"./x {{workflow.status}}"}}]}`)
	first := e.waitSteps("wf[0].one(0)")["wf[0].one(0)"]
	e.finish(first, 3)
	e.finish(e.waitSteps("wf[0].one(1)")["wf[0].one(1)"], 0)
	e.finish(e.waitSteps("wf[1].two")["wf[1].two"], 7)
	x := e.waitSteps("wf.onExit")["wf.onExit"]
	if cmd := x.Spec.Template.Spec.Processes[0].StartCmd; cmd != "./x Failed" {
		t.Errorf("exit handler runs %q", cmd)
	}
	if st := e.wf().Status; v4.WfPhaseFinished(st.Phase) {
		t.Fatalf("finished (%s) before its exit handler", st.Phase)
	}
	e.finish(x, 0)
	st := e.waitWf("Failed", func(s v4.WorkflowStatus) bool { return s.Phase == v4.WfFailed })
	if !strings.Contains(st.Message, "exit code 7") {
		t.Errorf("message %q", st.Message)
	}
}

// spec.suspend holds new steps; the resume annotation resumes a Suspend step.
func TestWorkflowSuspendResume(t *testing.T) {
	e := newWfEnv(t)
	e.applyWf(`{"entrypoint":"main","suspend":true,"templates":[
	 {"name":"main","steps":[[{"name":"wait","template":"pause"}],[{"name":"go","template":"work"}]]},
	 {"name":"pause","suspend":{}},
	 {"name":"work","process":{"procName":"w","startCmd":"./w"}}]}`)
	e.waitWf("Running", func(s v4.WorkflowStatus) bool { return s.Phase == v4.WfRunning })
	e.applyWf(`{"entrypoint":"main","templates":[
	 {"name":"main","steps":[[{"name":"wait","template":"pause"}],[{"name":"go","template":"work"}]]},
	 {"name":"pause","suspend":{}},
	 {"name":"work","process":{"procName":"w","startCmd":"./w"}}]}`)
	e.waitWf("the suspend node waits", func(s v4.WorkflowStatus) bool {
		return slices.ContainsFunc(mapValues(s.Nodes), func(n v4.WfNodeStatus) bool { return n.Type == v4.WfNodeSuspend && n.Phase == v4.WfRunning })
	})
	if len(e.steps()) != 0 {
		t.Fatal("a step started before the resume")
	}
	e.annotate("wf", WorkflowResumeAnnotation, "wait")
	e.finish(e.waitSteps("wf[1].go")["wf[1].go"], 0)
	e.waitWf("Succeeded", func(s v4.WorkflowStatus) bool { return s.Phase == v4.WfSucceeded })
	if _, ok := e.wf().Metadata.Annotations[WorkflowResumeAnnotation]; ok {
		t.Error("the resume annotation stays")
	}
}

func mapValues[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// annotate sets an annotation on workflow name, as the actions route does.
func (e *env) annotate(name, key, value string) {
	e.t.Helper()
	for range 10 {
		w := e.wfNamed(name)
		if w.Metadata.Annotations == nil {
			w.Metadata.Annotations = map[string]string{}
		}
		w.Metadata.Annotations[key] = value
		if err := testStore.Update(context.Background(), w, store.Raw{}); err == nil {
			return
		}
	}
	e.t.Fatal("could not annotate")
}
