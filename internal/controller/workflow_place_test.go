package controller

import (
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// A step is placed by its template's constraint, substituted with its inputs, else by
// the workflow's; a constraint that substitution made invalid fails the step with the
// field named instead of reaching the scheduler.
func TestWorkflowStepConstraints(t *testing.T) {
	e := startEnv(t, func(e *env) runner {
		return both{NewWorkflowController(testStore, e.feed, e.opts()), NewAppController(testStore, e.feed, e.opts())}
	}, "n1", "n2")
	e.applyWf(`{"entrypoint":"main","constraint":{"intersectionItem":[{"unionData":[{"name":"hostname","operate":"UNLIKE","type":3,"text":{"value":"n1"}}]}]},
	 "templates":[
	 {"name":"main","steps":[[{"name":"any","template":"free"},
	   {"name":"pinned","template":"on","arguments":{"parameters":[{"name":"host","value":"n1"}]}}],
	  [{"name":"bad","template":"on","arguments":{"parameters":[{"name":"host","value":"(["}]}}]]},
	 {"name":"free","process":{"procName":"p","startCmd":"./p","resources":{"limits":{"cpu":"0.1","memory":"16"}}}},
	 {"name":"on","inputs":{"parameters":[{"name":"host"}]},
	  "constraint":{"intersectionItem":[{"unionData":[{"name":"hostname","operate":"LIKE","type":3,"text":{"value":"{{inputs.parameters.host}}"}}]}]},
	  "process":{"procName":"p","startCmd":"./p","resources":{"limits":{"cpu":"0.1","memory":"16"}}}}]}`)
	steps := e.waitSteps("wf[0].any", "wf[0].pinned")
	if n := steps["wf[0].any"].Spec.Node; n != "n2" {
		t.Errorf("the step without a constraint of its own ran on %s; the workflow's keeps it off n1", n)
	}
	if n := steps["wf[0].pinned"].Spec.Node; n != "n1" {
		t.Errorf("the pinned step ran on %s, want n1 (its template's constraint, substituted)", n)
	}
	e.finish(steps["wf[0].any"], 0)
	e.finish(steps["wf[0].pinned"], 0)
	st := e.waitWf("the bad constraint fails the workflow", func(s v4.WorkflowStatus) bool { return v4.WfPhaseFinished(s.Phase) })
	var msg string
	for _, n := range st.Nodes {
		if n.DisplayName == "bad" && n.Type == v4.WfNodePod {
			msg = n.Message
		}
	}
	if st.Phase == v4.WfSucceeded || !strings.Contains(msg, "constraint.intersectionItem[0].unionData[0]") {
		t.Errorf("workflow %s, the bad step says %q; want a failure naming the constraint's field", st.Phase, msg)
	}
}

// A step that fits on no node leaves the workflow Running with the scheduler's reason in
// its status message, as a job's unplaced run does, besides the FailedScheduling event.
func TestWorkflowUnplacedStepSaysWhy(t *testing.T) {
	e := newWfEnv(t)
	e.applyWf(`{"entrypoint":"main","templates":[
	 {"name":"main","process":{"procName":"p","startCmd":"./p","resources":{"limits":{"cpu":"64","memory":"16"}}}}]}`)
	e.waitWf("the reason in the status", func(s v4.WorkflowStatus) bool {
		return s.Phase == v4.WfRunning && strings.Contains(s.Message, "1 step(s) cannot be placed yet: ")
	})
	e.eventually("a FailedScheduling event", func() bool { return contains(e.reasons(v4.KindWorkflow, "wf"), "FailedScheduling") })
}
