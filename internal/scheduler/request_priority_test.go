package scheduler

import (
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// A daemonset's and a workflow step's requests carry the owner's resolved priority (and
// a step its tier). A daemon never preempts; a step preempts as its class says, unless
// it is revocable (docs/policy.md, "Naming a class").
func TestRequestPriorityOfDaemonsetsAndSteps(t *testing.T) {
	prio := 900
	sched := v4.Scheduling{Priority: &prio, PreemptionPolicy: v4.PreemptLowerPriority}
	tmpl := v4.PodTemplate{Spec: v4.PodSpec{Processes: []v4.ProcessTask{{ProcName: "d", StartCmd: "./d"}}}}
	ds := &v4.Daemonset{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindDaemonset},
		Metadata: v4.ObjectMeta{Name: "d", Namespace: "ns"}, Spec: v4.DaemonsetSpec{Template: tmpl, Scheduling: sched}}
	revocable := sched
	revocable.Tier = v4.TierRevocable
	never := sched
	never.PreemptionPolicy = v4.PreemptNever
	step := func(s v4.Scheduling) (*Request, error) {
		return RequestForTemplate(AppKey{Kind: v4.KindWorkflow, Namespace: "ns", Name: "w"}, &v4.ObjectMeta{Name: "w", Namespace: "ns"}, &s, &tmpl, nil, []int{0})
	}
	for _, c := range []struct {
		what                     string
		build                    func() (*Request, error)
		noPreemptWant, revocable bool
	}{
		{"daemonset", func() (*Request, error) { return RequestFor(ds, []int{0}) }, true, false},
		{"step", func() (*Request, error) { return step(sched) }, false, false},
		{"step of a class that never preempts", func() (*Request, error) { return step(never) }, true, false},
		{"revocable step", func() (*Request, error) { return step(revocable) }, true, true},
	} {
		req, err := c.build()
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if req.Priority != 900 || req.NoPreempt != c.noPreemptWant || req.Revocable != c.revocable {
			t.Errorf("%s: priority %d, no preempt %v, revocable %v; want 900, %v, %v", c.what, req.Priority, req.NoPreempt, req.Revocable, c.noPreemptWant, c.revocable)
		}
	}
}
