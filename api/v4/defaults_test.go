package v4

import (
	"reflect"
	"testing"
)

func TestDefaults(t *testing.T) {
	a := &Application{Workload{TypeMeta: TypeMeta{"v4", KindApplication}, Metadata: ObjectMeta{Name: "a"},
		Constraint: constraintOf(ConstraintData{Name: "h", Operate: " unique "}),
		Spec: WorkloadSpec{Instance: 1, Template: PodTemplate{Spec: PodSpec{Containers: []Container{{
			Image: "x", ImagePullPolicy: "always", Ports: []Port{{Name: "p", Protocol: "TCP"}, {Name: "q"}},
			Resources:    &Resources{Limits: &ResourceList{CPU: "2", Memory: "512", Storage: "-1"}},
			HealthChecks: []HealthCheck{{Type: "http", IntervalSeconds: 5, HTTP: &HTTPCheck{Port: 80}}},
			ConfigMaps:   []ConfigMapRef{{Name: "c", Items: []ConfigMapItem{{Type: "FILE"}}}},
		}, {Image: "y"}}}}}}}
	Default(a)
	c := a.Spec.Template.Spec.Containers
	checks := []struct {
		name      string
		got, want any
	}{
		{"namespace", a.Metadata.Namespace, DefaultNamespace},
		{"restart policy", a.RestartPolicy.Policy, RestartOnFailure},
		{"kill grace", a.KillPolicy.GracePeriod, 1},
		{"operator", a.Constraint.IntersectionItem[0].UnionData[0].Operate, OpUnique},
		{"network mode", a.Spec.Template.Spec.NetworkMode, "BRIDGE"},
		{"network type", a.Spec.Template.Spec.NetworkType, "cnm"},
		{"pull policy canon", c[0].ImagePullPolicy, PullAlways},
		{"pull policy default", c[1].ImagePullPolicy, PullIfNotPresent},
		{"protocol lower", c[0].Ports[0].Protocol, "tcp"},
		{"protocol default", c[0].Ports[1].Protocol, "tcp"},
		{"requests from limits", *c[0].Resources.Requests, ResourceList{CPU: "2", Memory: "512"}},
		{"BCS default requests", *c[1].Resources.Requests, ResourceList{CPU: "1", Memory: "64", Storage: "64"}},
		{"check type", c[0].HealthChecks[0].Type, CheckHTTP},
		{"check timeout below interval", c[0].HealthChecks[0].TimeoutSeconds, 4},
		{"check grace", c[0].HealthChecks[0].GracePeriodSeconds, DefaultCheckGrace},
		{"check scheme", c[0].HealthChecks[0].HTTP.Scheme, "http"},
		{"check path", c[0].HealthChecks[0].HTTP.Path, "/"},
		{"item type", c[0].ConfigMaps[0].Items[0].Type, InjectFile},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	p := baseProc()
	if p.Spec.Template.Spec.NetworkMode != "HOST" || proc(p).StartGracePeriod != 1 {
		t.Errorf("process defaults: mode %q grace %d", p.Spec.Template.Spec.NetworkMode, proc(p).StartGracePeriod)
	}
	d := baseDeploy()
	if ru := d.Spec.Strategy.RollingUpdate; d.Spec.Strategy.Type != StrategyRollingUpdate || ru.MaxSurge != 1 || ru.MaxUnavailable != 1 || ru.RollingOrder != RollingCreateFirst {
		t.Errorf("deployment defaults: %+v %+v", d.Spec.Strategy, ru)
	}
	if s := baseService(); s.Spec.Type != "ClusterIP" {
		t.Errorf("service type %q", s.Spec.Type)
	}
}

func TestDefaultIsIdempotent(t *testing.T) {
	for _, obj := range []Object{baseApp(), baseProc(), baseDeploy(), baseService(), baseConfigMap(), baseSecret()} {
		before := contentJSON(obj)
		Default(obj)
		if after := contentJSON(obj); string(before) != string(after) {
			t.Errorf("%s changed on a second Default:\n%s\n%s", obj.GetKind(), before, after)
		}
	}
}

func TestKinds(t *testing.T) {
	for _, k := range Kinds() {
		obj, err := New(k)
		if err != nil || obj.GetKind() != k {
			t.Fatalf("New(%s) = %v, %v", k, obj, err)
		}
		for _, name := range []string{string(k), k.Plural(), "  " + string(k) + " "} {
			if got, err := ParseKind(name); err != nil || got != k {
				t.Errorf("ParseKind(%q) = %q, %v", name, got, err)
			}
		}
	}
	for short, want := range map[string]Kind{"app": KindApplication, "Apps": KindApplication, "proc": KindProcess, "cm": KindConfigMap, "svc": KindService, "ds": KindDaemonset, "deploy": KindDeployment} {
		if got, _ := ParseKind(short); got != want {
			t.Errorf("ParseKind(%q) = %q, want %q", short, got, want)
		}
	}
	if _, err := ParseKind("pods"); err == nil {
		t.Error("pods is not a kind")
	}
	if _, err := New("pod"); err == nil {
		t.Error("New(pod) must fail")
	}
}

func TestDaemonsetRestartPolicyDefaultsToAlways(t *testing.T) {
	for _, tt := range []struct {
		in   *RestartPolicy
		want string
	}{
		{nil, RestartAlways},
		{&RestartPolicy{Interval: 3}, RestartAlways},
		{&RestartPolicy{Policy: "never"}, RestartNever},
		{&RestartPolicy{Policy: "OnFailure"}, RestartOnFailure},
	} {
		d := &Daemonset{TypeMeta: TypeMeta{"v4", KindDaemonset}, Metadata: ObjectMeta{Name: "d"}, RestartPolicy: tt.in,
			Spec: DaemonsetSpec{Template: PodTemplate{Spec: PodSpec{Processes: []ProcessTask{{ProcName: "a", StartCmd: "./a"}}}}}}
		Default(d)
		if d.RestartPolicy.Policy != tt.want {
			t.Errorf("%+v: policy %q, want %q", tt.in, d.RestartPolicy.Policy, tt.want)
		}
	}
}
