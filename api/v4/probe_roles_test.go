package v4

import "testing"

func TestProbeRoleRules(t *testing.T) {
	const h = "spec.template.spec.containers[0].healthChecks"
	with := func(checks ...HealthCheck) Object {
		return appWith(func(a *Application) { container(a).HealthChecks = checks; defaultChecks(container(a).HealthChecks) })
	}
	tcp := func(role string) HealthCheck {
		return HealthCheck{Type: CheckTCP, Role: role, TCP: &TCPCheck{Port: 80}}
	}
	runRules(t, []ruleCase{
		{"unknown role", with(tcp("alive")), h + "[0].role", `"liveness", "readiness", "startup"`},
		{"two readiness", with(tcp(ProbeReadiness), tcp(ProbeReadiness)), h + "[1].type", "per task and role (readiness)"},
		{"no role is liveness", with(tcp(""), tcp(ProbeLiveness)), h + "[1].type", "per task and role (liveness)"},
		{"a remote check's role", with(HealthCheck{Type: CheckRemoteTCP, Role: ProbeReadiness, TCP: &TCPCheck{Port: 80}}), h + "[0].role", "only a local check"},
	})
	ok := with(tcp(""), tcp(ProbeReadiness), tcp(ProbeStartup))
	Default(ok)
	if errs := Validate(ok); len(errs) > 0 {
		t.Errorf("one check per role: %v", errs)
	}
}

// A pod whose checks have roles is ready by its Ready; the others by their health.
func TestReadinessWithRoles(t *testing.T) {
	yes, no := true, false
	running := func(mod func(*TaskGroup)) *TaskGroup {
		tg := &TaskGroup{}
		tg.Spec.Template.Spec.Processes = []ProcessTask{{ProcName: "web", HealthChecks: []HealthCheck{{Type: CheckTCP, Role: ProbeReadiness}}}}
		tg.Status.Phase = StatusRunning
		mod(tg)
		return tg
	}
	for name, tc := range map[string]struct {
		tg     *TaskGroup
		ready  bool
		reason string
	}{
		"ready": {running(func(tg *TaskGroup) { tg.Status.Ready = &yes }), true, ""},
		"not ready": {running(func(tg *TaskGroup) {
			tg.Status.Ready = &no
			tg.Status.Tasks = []TaskStatus{{Name: "init", Role: RoleInit}, {Name: "web", Ready: &no, ReadyMessage: "refused"}}
		}), false, "task web not ready: refused"},
		"not yet": {running(func(tg *TaskGroup) {
			tg.Status.Ready = &no
			tg.Status.Tasks = []TaskStatus{{Name: "web"}}
		}), false, "task web not ready yet"},
		"ready though unhealthy": {running(func(tg *TaskGroup) { tg.Status.Ready, tg.Status.Healthy = &yes, &no }), true, ""},
		"without roles: health":  {running(func(tg *TaskGroup) { tg.Status.Healthy = &no }), false, "health check failing"},
	} {
		ready, reason := tc.tg.Readiness()
		if ready != tc.ready || reason != tc.reason {
			t.Errorf("%s: ready %v %q, want %v %q", name, ready, reason, tc.ready, tc.reason)
		}
	}
}
