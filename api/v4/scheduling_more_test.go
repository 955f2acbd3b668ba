package v4

import (
	"testing"
)

// Argo's podPriorityClassName becomes spec.priorityClassName; two different classes, a
// budget on a workflow, and a tier or budget on a daemonset are refused naming the field.
func TestWorkflowAndDaemonsetScheduling(t *testing.T) {
	tmpls := []WfTemplate{{Name: "main", Container: &Container{Name: "main", Image: "x"}}}
	wf := func(s Scheduling, pod string) *Workflow {
		return &Workflow{TypeMeta: TypeMeta{APIVersion: APIVersion, Kind: KindWorkflow}, Metadata: ObjectMeta{Name: "w", Namespace: "ns"},
			Spec: WorkflowSpec{Entrypoint: "main", Templates: tmpls, Scheduling: s, PodPriorityClassName: pod}}
	}
	ds := func(s Scheduling) *Daemonset {
		return &Daemonset{TypeMeta: TypeMeta{APIVersion: APIVersion, Kind: KindDaemonset}, Metadata: ObjectMeta{Name: "d", Namespace: "ns"},
			Spec: DaemonsetSpec{Template: PodTemplate{Spec: PodSpec{Processes: []ProcessTask{{ProcName: "d", StartCmd: "./d"}}}}, Scheduling: s}}
	}
	for _, c := range []struct {
		what      string
		obj       Object
		field     string // "" when valid
		wantClass string
	}{
		{"Argo's spelling", wf(Scheduling{}, "high"), "", "high"},
		{"both, equal", wf(Scheduling{PriorityClassName: "high"}, "high"), "", "high"},
		{"both, different", wf(Scheduling{PriorityClassName: "low"}, "high"), "spec.podPriorityClassName", "low"},
		{"a revocable workflow", wf(Scheduling{Tier: TierRevocable}, ""), "", ""},
		{"a bad tier", wf(Scheduling{Tier: "spot"}, ""), "spec.tier", ""},
		{"a workflow budget", wf(Scheduling{DisruptionBudget: &DisruptionBudget{}}, ""), "spec.disruptionBudget", ""},
		{"a bad class name", wf(Scheduling{PriorityClassName: "Hi There"}, ""), "spec.priorityClassName", "Hi There"},
		{"a daemonset class", ds(Scheduling{PriorityClassName: "node-critical"}), "", "node-critical"},
		{"a revocable daemonset", ds(Scheduling{Tier: TierRevocable}), "spec.tier", ""},
		{"a daemonset budget", ds(Scheduling{DisruptionBudget: &DisruptionBudget{MaxUnavailable: 1}}), "spec.disruptionBudget", ""},
	} {
		Default(c.obj)
		errs := Validate(c.obj)
		switch {
		case c.field == "" && len(errs) > 0:
			t.Errorf("%s: refused: %v", c.what, errs)
		case c.field != "" && !hasField(errs, c.field):
			t.Errorf("%s: errors %v, want one on %s", c.what, errs, c.field)
		}
		var class string
		switch o := c.obj.(type) {
		case *Workflow:
			class = o.Spec.PriorityClassName
		case *Daemonset:
			class = o.Spec.PriorityClassName
		}
		if class != c.wantClass {
			t.Errorf("%s: class %q after Default, want %q", c.what, class, c.wantClass)
		}
	}
}
