package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/workflow/engine"
)

func strp(s string) *string { return &s }

// stepPod turns a started template into a pod of one main task and the StepIO: a
// script's source staged as a raw input and run by its interpreter, an input artifact
// from another step's output given that output's key, outputs with keys under the
// workflow's prefix.
func TestStepPod(t *testing.T) {
	wf := &v4.Workflow{Metadata: v4.ObjectMeta{Name: "wf", Namespace: "ns"}, Status: v4.WorkflowStatus{UID: "u1"}}
	res := &v4.Resources{}
	cases := []struct {
		name  string
		tmpl  v4.WfTemplate
		in    *v4.WfInputs
		check func(t *testing.T, pod *v4.PodTemplate, io *v4.StepIO)
		err   string
	}{
		{name: "script on the node", tmpl: v4.WfTemplate{Name: "s", Script: &v4.WfScript{Source: "print(1)", Command: []string{"python3", "-u"}, Resources: res}},
			check: func(t *testing.T, pod *v4.PodTemplate, io *v4.StepIO) {
				p := pod.Spec.Processes
				if len(p) != 1 || p[0].ProcName != "python3" || io.Main != "python3" || p[0].StartCmd != "python3 -u ./berth-script" || p[0].Resources != res {
					t.Errorf("process %+v", p)
				}
				if len(io.Inputs) != 1 || *io.Inputs[0].Raw != "print(1)" || io.Inputs[0].Path != "/berth-script" || !io.Result {
					t.Errorf("io %+v", io)
				}
			}},
		{name: "script in a container", tmpl: v4.WfTemplate{Name: "s", Script: &v4.WfScript{Source: "echo", Image: "img", Command: []string{"sh"}}},
			check: func(t *testing.T, pod *v4.PodTemplate, io *v4.StepIO) {
				c := pod.Spec.Containers
				if len(c) != 1 || c[0].Name != "main" || c[0].Command != "sh" || !slices.Equal(c[0].Args, []string{"/tmp/berth-script"}) {
					t.Errorf("container %+v", c)
				}
			}},
		{name: "artifacts and parameters", tmpl: v4.WfTemplate{Name: "c", Container: &v4.Container{Name: "x", Image: "img"},
			Outputs: &v4.WfOutputs{Parameters: []v4.WfParameter{{Name: "p", ValueFrom: &v4.WfValueFrom{Path: "/p", Default: strp("d")}},
				{Name: "out", ValueFrom: &v4.WfValueFrom{Stdout: true}}},
				Artifacts: []v4.WfArtifact{{Name: "model", Path: "/m"}}}},
			in: &v4.WfInputs{Artifacts: []v4.WfArtifact{{Name: "data", Path: "/d", From: "nabc123/out"}, {Name: "cfg", Path: "/c", Raw: &v4.WfRawArtifact{Data: "k=v"}}}},
			check: func(t *testing.T, pod *v4.PodTemplate, io *v4.StepIO) {
				if io.Inputs[0].Key != "ns/wf/u1/nabc123/out" || *io.Inputs[1].Raw != "k=v" {
					t.Errorf("inputs %+v", io.Inputs)
				}
				if len(io.Parameters) != 1 || *io.Parameters[0].Default != "d" || io.StdoutParameter != "out" {
					t.Errorf("parameters %+v stdout %q", io.Parameters, io.StdoutParameter)
				}
				if len(io.Artifacts) != 1 || io.Artifacts[0].Key != "ns/wf/u1/n1/model" || io.LogsKey != "ns/wf/u1/n1/main-logs" {
					t.Errorf("artifacts %+v logs %q", io.Artifacts, io.LogsKey)
				}
				if !needsCollection(io) || pod.Spec.Containers[0].Name != "x" || io.Main != "x" {
					t.Error("a step with outputs must wait for their collection")
				}
			}},
		{name: "from names no output", tmpl: v4.WfTemplate{Name: "c", Container: &v4.Container{Image: "i"}},
			in: &v4.WfInputs{Artifacts: []v4.WfArtifact{{Name: "d", Path: "/d", From: "../../x"}}}, err: "names no node's output"},
		{name: "from a dot-dot node", tmpl: v4.WfTemplate{Name: "c", Container: &v4.Container{Image: "i"}},
			in: &v4.WfInputs{Artifacts: []v4.WfArtifact{{Name: "d", Path: "/d", From: "../x"}}}, err: "names no node's output"},
		{name: "an output named ..", tmpl: v4.WfTemplate{Name: "c", Container: &v4.Container{Image: "i"},
			Outputs: &v4.WfOutputs{Artifacts: []v4.WfArtifact{{Name: "..", Path: "/x"}}}}, err: "not a usable name"},
		{name: "an output named main-logs", tmpl: v4.WfTemplate{Name: "c", Container: &v4.Container{Image: "i"},
			Outputs: &v4.WfOutputs{Artifacts: []v4.WfArtifact{{Name: "main-logs", Path: "/x"}}}}, err: "not a usable name"},
		{name: "nothing to run", tmpl: v4.WfTemplate{Name: "n"}, err: "runs nothing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod, io, err := stepPod(wf, engine.Start{NodeID: "n1", Name: "wf.x", Template: tc.tmpl}, tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if io.Main == "" || io.NodeID != "n1" || io.Workflow != "wf" {
				t.Errorf("io %+v", io)
			}
			tc.check(t, pod, io)
		})
	}
}

func TestShellJoin(t *testing.T) {
	if got := shellJoin([]string{"python3", "-c", "it's", ""}); got != `python3 -c 'it'\''s' ''` {
		t.Errorf("got %s", got)
	}
}

func TestStepTaskGroupName(t *testing.T) {
	long := strings.Repeat("w", 60)
	if got := stepTaskGroupName(long, "nabc", 2); got != strings.Repeat("w", 40)+".nabc.2" {
		t.Errorf("got %s", got)
	}
}

// Standard output loses its last newline, as Argo's outputs.result.
func TestStepOutputsTrimmed(t *testing.T) {
	res := &v4.StepResult{Collected: true, Result: strp("42\n"), Parameters: []v4.WfParameter{{Name: "out", Value: strp("a\nb\n")}, {Name: "f", Value: strp("x\n")}}}
	o := stepOutputsOf(res, 0, true, &v4.StepIO{StdoutParameter: "out"})
	if *o.Result != "42" || *o.Parameters[0].Value != "a\nb" || *o.Parameters[1].Value != "x\n" || *res.Parameters[0].Value != "a\nb\n" {
		t.Errorf("result %q, parameters %q %q", *o.Result, *o.Parameters[0].Value, *o.Parameters[1].Value)
	}
}

// The agent's verdicts: an exit with a collection error fails the step; a staging error
// (exit code -1: the main task never ran) is an Error.
func TestStepOutcomeFromAgent(t *testing.T) {
	p := &wfPass{c: &WorkflowController{collectWait: time.Minute}, now: time.Now()}
	io := &v4.StepIO{Main: "main", Result: true}
	for _, tc := range []struct {
		res   v4.StepResult
		phase v4.TaskGroupStatus
		want  string
	}{
		{v4.StepResult{Collected: true, ExitCode: 0}, v4.TaskGroupStatus{Phase: v4.StatusFinish}, v4.WfSucceeded},
		{v4.StepResult{Collected: true, ExitCode: 2}, v4.TaskGroupStatus{Phase: v4.StatusFailed}, v4.WfFailed},
		{v4.StepResult{Collected: true, ExitCode: 0, Error: "output parameter p: too big"}, v4.TaskGroupStatus{Phase: v4.StatusFinish}, v4.WfFailed},
		{v4.StepResult{Collected: true, ExitCode: -1, Error: "stage input data: 404"}, v4.TaskGroupStatus{Phase: v4.StatusFailed}, v4.WfError},
	} {
		tg := &v4.TaskGroup{Spec: v4.TaskGroupSpec{Step: io, Desired: v4.DesiredRunning}, Status: tc.phase}
		res := tc.res
		tg.Status.Step = &res
		n, ok := p.stepOutcome(v4.WfNodeStatus{Phase: v4.WfRunning}, tg)
		if !ok || n.Phase != tc.want || tc.res.Error != "" && n.Message != tc.res.Error {
			t.Errorf("%+v: %s %q, want %s", tc.res, n.Phase, n.Message, tc.want)
		}
	}
}

// A main task the kernel's OOM killer killed fails the step as Argo says it, whatever
// exit the agent collected after the kill (-1: it never ran to an exit).
func TestStepOutcomeOOMKilled(t *testing.T) {
	p := &wfPass{c: &WorkflowController{collectWait: time.Minute}, now: time.Now()}
	for _, code := range []int{-1, 137} {
		tg := &v4.TaskGroup{Spec: v4.TaskGroupSpec{Step: &v4.StepIO{Main: "main"}, Desired: v4.DesiredRunning},
			Status: v4.TaskGroupStatus{Phase: v4.StatusFailed, Step: &v4.StepResult{Collected: true, ExitCode: code},
				Tasks: []v4.TaskStatus{{Name: "main", Status: v4.StatusFailed, Info: v4.ContainerInfo{ExitCode: 137, OOMKilled: true}}}}}
		n, ok := p.stepOutcome(v4.WfNodeStatus{Phase: v4.WfRunning}, tg)
		if !ok || n.Phase != v4.WfFailed || n.Message != "OOMKilled (exit code 137)" {
			t.Errorf("collected exit %d: %s %q, want Failed, OOMKilled (exit code 137)", code, n.Phase, n.Message)
		}
	}
}
