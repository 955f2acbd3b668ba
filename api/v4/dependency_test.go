package v4

import (
	"errors"
	"strings"
	"testing"
)

func baseDependency() *Dependency {
	d := &Dependency{TypeMeta: TypeMeta{APIVersion: "v4", Kind: KindDependency},
		Metadata: ObjectMeta{Name: "logagent", Namespace: "infra"},
		Spec: DependencySpec{Template: PodTemplate{Spec: PodSpec{
			Processes: []ProcessTask{{ProcName: "agent", StartCmd: "./agent"}}}}}}
	Default(d)
	return d
}

func depWith(f func(d *Dependency)) Object { d := baseDependency(); f(d); return d }

func TestDependencyDefaults(t *testing.T) {
	d := baseDependency()
	if errs := Validate(d); len(errs) > 0 {
		t.Fatalf("base dependency invalid: %v", errs)
	}
	if d.RestartPolicy.Policy != RestartAlways || d.KillPolicy.GracePeriod != 1 {
		t.Errorf("policies = %+v %+v, want Always and grace 1", d.RestartPolicy, d.KillPolicy)
	}
	if d.Spec.Template.Spec.NetworkMode != "HOST" {
		t.Errorf("network mode %q, want HOST for processes", d.Spec.Template.Spec.NetworkMode)
	}
	explicit := depWith(func(d *Dependency) { d.RestartPolicy = &RestartPolicy{Policy: "never"} }).(*Dependency)
	Default(explicit)
	if explicit.RestartPolicy.Policy != RestartNever {
		t.Errorf("explicit policy became %q", explicit.RestartPolicy.Policy)
	}

	p := baseProc()
	p.Spec.Template.Spec.Dependencies = []DependencyRef{{Name: "a"}, {Name: "b", Namespace: "infra", Policy: "NODE"}}
	Default(p)
	got := p.Spec.Template.Spec.Dependencies
	want := []DependencyRef{{Name: "a", Namespace: "ns-a", Policy: DependencyPolicyNamespace}, {Name: "b", Namespace: "infra", Policy: DependencyPolicyNode}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("dependencies[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	Default(p) // idempotent
	if p.Spec.Template.Spec.Dependencies[0] != want[0] {
		t.Errorf("second Default changed %+v", p.Spec.Template.Spec.Dependencies[0])
	}
}

func TestDependencyRules(t *testing.T) {
	const deps = "spec.template.spec.dependencies"
	withRefs := func(refs ...DependencyRef) Object {
		return procWith(func(p *Process) { p.Spec.Template.Spec.Dependencies = refs })
	}
	runRules(t, []ruleCase{
		{"ref name required", withRefs(DependencyRef{Namespace: "ns-a", Policy: "node"}), deps + "[0].name", "required"},
		{"ref name dot", withRefs(DependencyRef{Name: "a.b", Namespace: "ns-a", Policy: "node"}), deps + "[0].name", "must not contain '.'"},
		{"ref namespace", withRefs(DependencyRef{Name: "a", Namespace: "NS", Policy: "node"}), deps + "[0].namespace", "lowercase"},
		{"ref policy", withRefs(DependencyRef{Name: "a", Namespace: "ns-a", Policy: "host"}), deps + "[0].policy", `"namespace", "node"`},
		{"ref policy typo", withRefs(DependencyRef{Name: "a", Namespace: "ns-a", Policy: "nod"}), deps + "[0].policy", `did you mean "node"`},
		{"ref twice", withRefs(DependencyRef{Name: "a", Namespace: "ns-a", Policy: "node"}, DependencyRef{Name: "a", Namespace: "ns-a", Policy: "namespace"}),
			deps + "[1]", "declared twice"},
		{"app refs too", appWith(func(a *Application) {
			a.Spec.Template.Spec.Dependencies = []DependencyRef{{Name: "", Namespace: "x", Policy: "node"}}
		}),
			deps + "[0].name", "required"},
		{"dependency name", depWith(func(d *Dependency) { d.Metadata.Name = "Log" }), "metadata.name", "lowercase"},
		{"dependency without tasks", depWith(func(d *Dependency) { d.Spec.Template.Spec.Processes = nil }), "spec.template.spec.containers", "at least one container"},
		{"dependency both task kinds", depWith(func(d *Dependency) { d.Spec.Template.Spec.Containers = []Container{{Image: "x"}} }), "spec.template.spec", "cannot coexist"},
		{"dependency process rules", depWith(func(d *Dependency) { d.Spec.Template.Spec.Processes[0].ProcName = "" }), "spec.template.spec.processes[0].procName", "required"},
		{"dependency nested", depWith(func(d *Dependency) {
			d.Spec.Template.Spec.Dependencies = []DependencyRef{{Name: "other", Namespace: "infra", Policy: "node"}}
		}), deps, "cannot itself declare dependencies"},
		{"dependency restart", depWith(func(d *Dependency) { d.RestartPolicy.Policy = "Sometimes" }), "restartPolicy.policy", `"Never", "Always", "OnFailure"`},
		{"dependency grace", depWith(func(d *Dependency) { d.KillPolicy.GracePeriod = -1 }), "killPolicy.gracePeriod", "negative"},
		{"dependency constraint", depWith(func(d *Dependency) { d.Constraint = constraintOf(ConstraintData{Operate: OpUnique}) }),
			"constraint.intersectionItem[0].unionData[0].name", "required"},
		{"dependency template label", depWith(func(d *Dependency) { d.Spec.Template.Metadata = &TemplateMeta{Labels: map[string]string{"-x": "y"}} }),
			"spec.template.metadata.labels.-x", "key must be"},
	})
}

func TestParseDependency(t *testing.T) {
	cases := []struct {
		name  string
		doc   string
		field string // "" when the document is valid
		msg   string
	}{
		{"valid", `{"apiVersion":"v4","kind":"dependency","metadata":{"name":"logagent","namespace":"infra"},
			"spec":{"template":{"spec":{"processes":[{"procName":"agent","startCmd":"./agent"}]}}}}`, "", ""},
		{"short kind in any case", `{"apiVersion":"v4","kind":"Dependency","metadata":{"name":"d"},"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}`, "", ""},
		{"unknown field", `{"apiVersion":"v4","kind":"dependency","metadata":{"name":"d"},"spec":{"instance":2,"template":{"spec":{"containers":[{"image":"x"}]}}}}`,
			"spec.instance", "unknown field"},
		{"ref unknown field", `{"apiVersion":"v4","kind":"process","metadata":{"name":"p"},"spec":{"instance":1,"template":{"spec":{
			"processes":[{"procName":"a","startCmd":"./a"}],"dependencies":[{"name":"d","polcy":"node"}]}}}}`,
			"spec.template.spec.dependencies[0].polcy", `did you mean "policy"`},
		{"ref not a list", `{"apiVersion":"v4","kind":"process","metadata":{"name":"p"},"spec":{"instance":1,"template":{"spec":{
			"processes":[{"procName":"a","startCmd":"./a"}],"dependencies":{"name":"d"}}}}}`,
			"spec.template.spec.dependencies", "must be a list"},
		{"status ignored", `{"apiVersion":"v4","kind":"dependency","metadata":{"name":"d"},"status":{"pods":[{"node":"n","policy":"node","refCount":3}]},
			"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}`, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := ParseValidated([]byte(tc.doc), ValidateStrict)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				d, ok := docs[0].Object.(*Dependency)
				if !ok || d.Kind != KindDependency {
					t.Fatalf("parsed %T, want *Dependency", docs[0].Object)
				}
				if !d.Status.IsZero() {
					t.Errorf("status kept from the document: %+v", d.Status)
				}
				return
			}
			var fe FieldErrors
			if !errors.As(err, &fe) {
				t.Fatalf("want FieldErrors, got %v", err)
			}
			for _, e := range fe {
				if e.Field == tc.field && strings.Contains(e.Message, tc.msg) {
					return
				}
			}
			t.Errorf("want %s: ...%s..., got %v", tc.field, tc.msg, fe)
		})
	}
}

func TestDependencyStatusCarried(t *testing.T) {
	stored := baseDependency()
	stored.Status = DependencyStatus{Pods: []DependencyPod{{Node: "n1", Policy: DependencyPolicyNode, RefCount: 2}}}
	updated := baseDependency()
	CarryStatus(updated, stored)
	if len(updated.Status.Pods) != 1 || updated.Status.Pods[0].RefCount != 2 {
		t.Errorf("status not carried: %+v", updated.Status)
	}
	if !SameContent(updated, baseDependency()) {
		t.Error("SameContent must ignore the status")
	}
}
