package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// keepSteps is spec (a workflow spec's JSON) with podGC Never: its steps' task groups
// stay until the workflow is deleted, for tests that count them.
func keepSteps(spec string) string {
	return withSpec(spec, `"podGC":{"strategy":"Never"}`)
}

// withSpec adds fields (JSON members) to a workflow spec's JSON.
func withSpec(spec, fields string) string { return "{" + fields + "," + spec[1:] }

// TestWorkflowPodGC: each podGC strategy deletes the steps' task groups when it says,
// and only those of steps whose end is stored.
func TestWorkflowPodGC(t *testing.T) {
	for _, tc := range []struct {
		name, podGC string
		failB       bool
		// whileRunning: the task groups left when B and C run (A ended); atEnd: those
		// left once the workflow ended.
		whileRunning, atEnd []string
	}{
		{name: "default", whileRunning: []string{"wf.A", "wf.B", "wf.C"}, atEnd: nil},
		{name: "OnWorkflowCompletion failed", podGC: `{"strategy":"onworkflowcompletion"}`, failB: true,
			whileRunning: []string{"wf.A", "wf.B", "wf.C"}, atEnd: nil},
		{name: "Never", podGC: `{"strategy":"Never"}`, whileRunning: []string{"wf.A", "wf.B", "wf.C"},
			atEnd: []string{"wf.A", "wf.B", "wf.C", "wf.D"}},
		{name: "OnWorkflowSuccess failed", podGC: `{"strategy":"OnWorkflowSuccess"}`, failB: true,
			whileRunning: []string{"wf.A", "wf.B", "wf.C"}, atEnd: []string{"wf.A", "wf.B", "wf.C"}},
		{name: "OnPodCompletion", podGC: `{"strategy":"OnPodCompletion"}`, whileRunning: []string{"wf.B", "wf.C"}, atEnd: nil},
		{name: "OnPodSuccess failed", podGC: `{"strategy":"OnPodSuccess"}`, failB: true,
			whileRunning: []string{"wf.B", "wf.C"}, atEnd: []string{"wf.B"}},
		{name: "delayed", podGC: `{"deleteDelayDuration":"1h"}`, whileRunning: []string{"wf.A", "wf.B", "wf.C"},
			atEnd: []string{"wf.A", "wf.B", "wf.C", "wf.D"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newWfEnv(t)
			spec := wfDiamond
			if tc.podGC != "" {
				spec = withSpec(spec, `"podGC":`+tc.podGC)
			}
			e.applyWf(spec)
			e.finish(e.waitSteps("wf.A")["wf.A"], 0, "x=1")
			bc := e.waitSteps("wf.B", "wf.C")
			e.eventually(fmt.Sprint("task groups while running: ", tc.whileRunning), func() bool {
				return slices.Equal(e.stepNames(), tc.whileRunning)
			})
			e.finish(bc["wf.C"], 0)
			if tc.failB {
				e.finish(bc["wf.B"], 3)
				e.waitWf("Failed", func(s v4.WorkflowStatus) bool { return s.Phase == v4.WfFailed })
			} else {
				e.finish(bc["wf.B"], 0)
				e.finish(e.waitSteps("wf.D")["wf.D"], 0)
				e.waitWf("Succeeded", func(s v4.WorkflowStatus) bool { return s.Phase == v4.WfSucceeded })
			}
			e.eventually(fmt.Sprint("task groups at the end: ", tc.atEnd), func() bool { return slices.Equal(e.stepNames(), tc.atEnd) })
			time.Sleep(100 * time.Millisecond) // nothing more goes
			if got := e.stepNames(); !slices.Equal(got, tc.atEnd) {
				t.Errorf("task groups %v, want %v", got, tc.atEnd)
			}
			// The record stays in the nodes: every step's phase and exit code.
			for _, n := range e.wf().Status.Nodes {
				if n.Type == v4.WfNodePod && (n.Outputs == nil || n.Outputs.ExitCode == nil || n.FinishedAt.IsZero()) {
					t.Errorf("node %s lost its record: %+v", n.Name, n)
				}
			}
		})
	}
}

// TestWorkflowTTL: ttlStrategy deletes a finished workflow after the seconds its phase
// says, and keeps one its phase gives no TTL.
func TestWorkflowTTL(t *testing.T) {
	e := newWfEnv(t)
	one := `{"entrypoint":"w","templates":[{"name":"w","process":{"procName":"w","startCmd":"./w"}}]}`
	e.applyWfNamed("gone", withSpec(one, `"ttlStrategy":{"secondsAfterSuccess":0,"secondsAfterFailure":3600}`))
	e.applyWfNamed("kept", withSpec(one, `"ttlStrategy":{"secondsAfterCompletion":0,"secondsAfterSuccess":3600}`))
	for _, tg := range e.waitSteps("gone", "kept") {
		e.finish(tg, 0)
	}
	e.eventually("gone deleted", func() bool {
		_, err := testStore.Get(context.Background(), v4.KindWorkflow, "ctl", "gone")
		return errors.Is(err, store.ErrNotFound)
	})
	e.eventually("the Expired event", func() bool { return slices.Contains(e.reasons(v4.KindWorkflow, "gone"), "Expired") })
	e.eventually("gone's steps removed", func() bool { return len(e.stepNamesOf("gone")) == 0 })
	if w := e.wfNamed("kept"); w.Status.Phase != v4.WfSucceeded {
		t.Errorf("kept is %s", w.Status.Phase)
	}
}

// stepNames are the names of the nodes of workflow wf whose task groups exist, sorted.
func (e *env) stepNames() []string { return e.stepNamesOf("wf") }

func (e *env) stepNamesOf(wf string) []string {
	var names []string
	for _, tg := range e.wfTaskGroups() {
		if tg.Spec.Owner.Name == wf {
			names = append(names, e.nodeName(tg))
		}
	}
	slices.Sort(names)
	return names
}
