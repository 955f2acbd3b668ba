package controller

import (
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// A workload of v4.MaxInstances instances, every one stopped (berth stop ... all) and
// none with a run left: what a pass of the deployment's rollout (child.state) and of the
// application controller (the loop over the wanted indexes) look up per index. A scan of
// the list per index made each pass quadratic (docs/benchmarks.md, "Stopped instances").
func BenchmarkStoppedLookupsAllStopped(b *testing.B) {
	n := v4.MaxInstances
	w := &v4.Workload{}
	w.Spec.Instance = n
	for i := range n {
		w.Spec.StoppedInstances = append(w.Spec.StoppedInstances, i)
	}
	ch := &child{w: w, byIndex: map[int][]*v4.TaskGroup{}}
	for b.Loop() {
		if r := ch.state(); len(r.available) != n || !r.available[n-1] {
			b.Fatal("every stopped instance is available")
		}
	}
}

// The statuses name the stopped instances, at most v4.MaxBackOffListed of them: the
// list may hold every instance of a workload of v4.MaxInstances, which the status
// (written at each change) must not copy.
func TestStoppedMessageIsBounded(t *testing.T) {
	n := v4.MaxInstances
	w := &v4.Workload{}
	w.Spec.Instance = n
	for i := range n {
		w.Spec.StoppedInstances = append(w.Spec.StoppedInstances, i)
	}
	r := &pass{w: w, stopped: n}
	st := r.status()
	if len(st.Message) > 200 || !strings.HasPrefix(st.Message, "100000 of 100000 instances stopped on request: [0 1 2 ") {
		t.Errorf("application status message of %d bytes: %.200s", len(st.Message), st.Message)
	}
	d := &v4.Deployment{}
	d.Spec.Instance, d.Spec.StoppedInstances = n, w.Spec.StoppedInstances
	ro := &rollout{d: d}
	ro.st.Stopped, ro.st.CurrentAvailable = n, n
	ro.setPhase(rolloutPhase{}, stepPlan{})
	if len(ro.st.Message) > 200 || !strings.HasPrefix(ro.st.Message, "100000 of 100000 instances stopped on request: [0 1 2 ") {
		t.Errorf("deployment status message of %d bytes: %.200s", len(ro.st.Message), ro.st.Message)
	}
	// A short list is listed whole.
	w.Spec.Instance, w.Spec.StoppedInstances = 3, []int{0, 2}
	r = &pass{w: w, stopped: 2}
	if got, want := r.status().Message, "2 of 3 instances stopped on request: [0 2] (berth start starts one again)"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}
