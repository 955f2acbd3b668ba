package quota

import (
	"errors"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func app(name string, instances int, cpu, mem string, ext ...v4.ExtendedResource) *v4.Application {
	a := &v4.Application{}
	a.Kind = v4.KindApplication
	a.Metadata = v4.ObjectMeta{Name: name, Namespace: "team-a"}
	a.Spec.Instance = instances
	a.Spec.Template.Spec.Containers = []v4.Container{{Name: "c", Resources: &v4.Resources{
		Requests: &v4.ResourceList{CPU: v4.Quantity(cpu), Memory: v4.Quantity(mem)}, ExtendedResources: ext}}}
	return a
}

func controlled(a *v4.Application, dep string) *v4.Application {
	a.Metadata.Annotations = map[string]string{v4.ControlledByAnnotation: "deployment/" + dep}
	return a
}

func deployment(name string, instances int, cpu string) *v4.Deployment {
	d := &v4.Deployment{}
	d.Kind = v4.KindDeployment
	d.Metadata = v4.ObjectMeta{Name: name, Namespace: "team-a"}
	d.Spec.Instance = instances
	d.Spec.Template = &v4.PodTemplate{Spec: v4.PodSpec{Containers: []v4.Container{{Name: "c",
		Resources: &v4.Resources{Requests: &v4.ResourceList{CPU: v4.Quantity(cpu)}}}}}}
	return d
}

func jobTG(owner v4.Kind, phase string, cpu float64, gpus float64) *v4.TaskGroup {
	tg := &v4.TaskGroup{}
	tg.Spec.Owner = v4.OwnerRef{Kind: owner, Name: "j"}
	tg.Spec.Resources = v4.NodeResources{CPU: cpu + 0.1, MemoryMB: 64, Extended: map[string]float64{v4.ResourceGPU: gpus}}
	tg.Spec.Overhead = v4.NodeResources{CPU: 0.1}
	tg.Status.Phase = phase
	return tg
}

func revocable(a *v4.Application) *v4.Application { a.Spec.Tier = v4.TierRevocable; return a }

func revocableDeployment(d *v4.Deployment) *v4.Deployment { d.Spec.Tier = v4.TierRevocable; return d }

func revocableTG(tg *v4.TaskGroup) *v4.TaskGroup { tg.Spec.Revocable = true; return tg }

func TestUsage(t *testing.T) {
	gpu := v4.ExtendedResource{Name: v4.ResourceGPU, Value: 2}
	share := v4.ExtendedResource{Name: v4.ResourceVCUDACore, Value: 30}
	shareMem := v4.ExtendedResource{Name: v4.ResourceVCUDAMemory, Value: 4}
	tests := []struct {
		name string
		objs []v4.Object
		want List
	}{
		{"empty", nil, List{}},
		{"instances times requests", []v4.Object{app("a", 3, "0.5", "128")}, List{CPU: 1.5, Memory: 384, Instances: 3}},
		{"gpu cards and shares", []v4.Object{app("a", 2, "", "", gpu), app("b", 1, "1", "", share, shareMem)},
			List{CPU: 1, GPU: 4, VCUDACore: 30, VCUDAMemory: 4, Instances: 3}},
		{"deployment before its application", []v4.Object{deployment("d", 4, "1")}, List{CPU: 4, Instances: 4}},
		{"rollout surge counts old and new", []v4.Object{deployment("d", 4, "1"),
			controlled(app("d-v1", 3, "1", ""), "d"), controlled(app("d-v2", 2, "1", ""), "d")}, List{CPU: 5, Instances: 5}},
		{"rollout below spec counts spec", []v4.Object{deployment("d", 4, "1"),
			controlled(app("d-v2", 2, "1", ""), "d")}, List{CPU: 4, Instances: 4}},
		{"active job task groups", []v4.Object{jobTG(v4.KindJob, v4.StatusRunning, 1, 1),
			jobTG(v4.KindWorkflow, v4.StatusStaging, 2, 0), jobTG(v4.KindJob, v4.StatusFinish, 8, 8),
			jobTG(v4.KindApplication, v4.StatusRunning, 8, 8)}, List{CPU: 3, Memory: 128, GPU: 1, Instances: 2}},
		{"a dependency's pods while active", []v4.Object{jobTG(v4.KindDependency, v4.StatusRunning, 0.5, 0),
			jobTG(v4.KindDependency, v4.StatusRunning, 0.5, 0), jobTG(v4.KindDependency, v4.StatusFinish, 8, 8)},
			List{CPU: 1, Memory: 128, Instances: 2}},
		{"revocable work is not charged", []v4.Object{app("a", 1, "1", ""), revocable(app("r", 4, "1", "")),
			revocableDeployment(deployment("d", 4, "1")), revocableTG(jobTG(v4.KindJob, v4.StatusRunning, 2, 0))},
			List{CPU: 1, Instances: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Usage(tt.objs)
			for k, v := range tt.want {
				if d := got[k] - v; d > 1e-9 || d < -1e-9 {
					t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
				}
			}
			for k, v := range got {
				if _, ok := tt.want[k]; !ok && v != 0 {
					t.Errorf("%s = %v, want none", k, v)
				}
			}
		})
	}
}

func TestCheck(t *testing.T) {
	quota := List{CPU: 8, GPU: 0, Instances: 10}
	tests := []struct {
		name        string
		used, asked List
		want        string
	}{
		{"fits", List{CPU: 7}, List{CPU: 1}, ""},
		{"cpu over", List{CPU: 7.5}, List{CPU: 1}, "namespace team-a: cpu quota exceeded: 7.5 used + 1 asked > 8"},
		{"gpu forbidden", nil, List{GPU: 1}, "namespace team-a: gpu quota exceeded: 0 used + 1 asked > 0"},
		{"unbounded memory", nil, List{Memory: 1e9}, ""},
		{"shrinking above the quota passes", List{CPU: 20}, List{CPU: -2}, ""},
		{"instances", List{Instances: 10}, List{Instances: 1}, "namespace team-a: instances quota exceeded: 10 used + 1 asked > 10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check("team-a", quota, tt.used, tt.asked)
			got := ""
			if err != nil {
				got = err.Error()
				var ee *ExceededError
				if !errors.As(err, &ee) {
					t.Errorf("%v is not an ExceededError", err)
				}
			}
			if got != tt.want {
				t.Errorf("Check = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		l    List
		want string
	}{
		{List{CPU: 1, Instances: 3}, ""},
		{List{"cpus": 1}, "resources.cpus"},
		{List{CPU: -1}, "resources.cpu"},
		{List{Memory: 1e13}, "resources.memory"},
	} {
		errs := tt.l.Validate("resources", Names)
		if got := errs.Error(); tt.want == "" && len(errs) > 0 || tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("Validate(%v) = %v, want %q", tt.l, errs, tt.want)
		}
	}
}

func TestApplyDefaults(t *testing.T) {
	d := &Defaults{Requests: List{CPU: 0.25, Memory: 64}, Limits: List{Memory: 128}, Max: List{CPU: 2, GPU: 1}}
	tests := []struct {
		name    string
		obj     v4.Object
		wantErr string
		wantCPU v4.Quantity
	}{
		{"no resources get defaults", func() v4.Object {
			a := app("a", 1, "", "")
			a.Spec.Template.Spec.Containers[0].Resources = nil
			return a
		}(), "", "0.25"},
		{"own request kept", app("a", 1, "1.5", ""), "", "1.5"},
		{"above max cpu", app("a", 1, "3", ""), "spec.template.spec.containers[0].resources.requests.cpu: 3 is above namespace team-a's maximum per task (2)", ""},
		{"above max gpu", app("a", 1, "1", "", v4.ExtendedResource{Name: v4.ResourceGPU, Value: 2}),
			"spec.template.spec.containers[0].resources.extendedResources[0].value", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Apply("team-a", tt.obj, d)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Apply = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := tt.obj.(*v4.Application).Spec.Template.Spec.Containers[0].Resources
			if r.Requests.CPU != tt.wantCPU || r.Requests.Memory == "" || r.Limits.Memory != "128" {
				t.Errorf("resources = %+v %+v", r.Requests, r.Limits)
			}
		})
	}
	// A task that wrote nothing got the cluster's defaults (1 cpu, 64 MB, 64 MB) from
	// v4.Default: the namespace's replace them where it has its own.
	bare := app("bare", 1, "", "")
	bare.Spec.Template.Spec.Containers[0].Resources = nil
	v4.Default(bare)
	if err := Apply("team-a", bare, d); err != nil {
		t.Fatal(err)
	}
	if r := bare.Spec.Template.Spec.Containers[0].Resources; r.Requests.CPU != "0.25" || r.Requests.Memory != "64" || r.Requests.Storage != "64" {
		t.Errorf("defaulted task: %+v", r.Requests)
	}
	// A job with a high parallelism and a workflow's templates get the defaults too.
	wf := &v4.Workflow{Spec: v4.WorkflowSpec{Templates: []v4.WfTemplate{{Name: "s", Script: &v4.WfScript{Source: "x"}}}}}
	if err := Apply("team-a", wf, d); err != nil || wf.Spec.Templates[0].Script.Resources.Requests.CPU != "0.25" {
		t.Errorf("workflow script: %v %+v", err, wf.Spec.Templates[0].Script.Resources)
	}
}

func TestDefaultsValidate(t *testing.T) {
	d := &Defaults{Requests: List{CPU: 3}, Limits: List{CPU: 2}, Max: List{CPU: 2, "bogus": 1}}
	got := d.Validate("limitDefaults").Error()
	for _, want := range []string{"limitDefaults.defaultRequests.cpu", "limitDefaults.max.bogus"} {
		if !strings.Contains(got, want) {
			t.Errorf("Validate = %s, want %s", got, want)
		}
	}
}
