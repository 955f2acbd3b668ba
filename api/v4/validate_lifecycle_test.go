package v4

import (
	"strings"
	"testing"
)

func withLifecycle(l *Lifecycle) Object {
	return appWith(func(a *Application) {
		main := *container(a)
		main.Name = "main"
		side := Container{Name: "side", Image: "x", Lifecycle: l}
		a.Spec.Template.Spec.Containers = []Container{side, main}
	})
}

func execHook(cmd string) *Hook { return &Hook{Exec: &ExecHook{Command: cmd}} }

// Roles and hooks a task cannot have are refused with the field named; a hook reaches only
// its own task's ports.
func TestLifecycleRules(t *testing.T) {
	const c0 = "spec.template.spec.containers[0]"
	runRules(t, []ruleCase{
		{"init and sidecar", withLifecycle(&Lifecycle{Init: true, Sidecar: true}), c0 + ".lifecycle.sidecar", "cannot also be a sidecar"},
		{"init with postStart", withLifecycle(&Lifecycle{Init: true, PostStart: execHook("true")}), c0 + ".lifecycle.postStart", "takes no hooks"},
		{"init with preStop", withLifecycle(&Lifecycle{Init: true, PreStop: execHook("true")}), c0 + ".lifecycle.preStop", "takes no hooks"},
		{"init with a check", appWith(func(a *Application) {
			c := *container(a)
			c.Name, c.Lifecycle = "init", &Lifecycle{Init: true}
			c.HealthChecks = []HealthCheck{{Type: CheckTCP, TCP: &TCPCheck{PortName: "http"}}}
			c.Ports = []Port{{Name: "i", ContainerPort: 81}}
			c.HealthChecks[0].TCP.PortName = "i"
			a.Spec.Template.Spec.Containers = append([]Container{c}, *container(a))
		}), c0 + ".healthChecks", "no local health checks"},
		{"empty hook", withLifecycle(&Lifecycle{PreStop: &Hook{}}), c0 + ".lifecycle.preStop", "needs exec or httpGet"},
		{"both actions", withLifecycle(&Lifecycle{PreStop: &Hook{Exec: &ExecHook{Command: "x"}, HTTPGet: &HTTPCheck{PortName: "x"}}}), c0 + ".lifecycle.preStop.httpGet", "not both"},
		{"empty command", withLifecycle(&Lifecycle{PostStart: execHook("  ")}), c0 + ".lifecycle.postStart.exec.command", "required"},
		{"long command", withLifecycle(&Lifecycle{PostStart: execHook(strings.Repeat("x", maxHookCommand+1))}), c0 + ".lifecycle.postStart.exec.command", "at most"},
		{"NUL command", withLifecycle(&Lifecycle{PostStart: execHook("a\x00b")}), c0 + ".lifecycle.postStart.exec.command", "NUL"},
		{"timeout", withLifecycle(&Lifecycle{PreStop: &Hook{Exec: &ExecHook{Command: "x"}, TimeoutSeconds: MaxHookTimeout + 1}}), c0 + ".lifecycle.preStop.timeoutSeconds", "must be 0"},
		{"negative timeout", withLifecycle(&Lifecycle{PreStop: &Hook{Exec: &ExecHook{Command: "x"}, TimeoutSeconds: -1}}), c0 + ".lifecycle.preStop.timeoutSeconds", "must be 0"},
		{"another port", withLifecycle(&Lifecycle{PreStop: &Hook{HTTPGet: &HTTPCheck{Port: 2379}}}), c0 + ".lifecycle.preStop.httpGet.port", "not one of the task's ports"},
		{"another task's port name", withLifecycle(&Lifecycle{PreStop: &Hook{HTTPGet: &HTTPCheck{PortName: "http"}}}), c0 + ".lifecycle.preStop.httpGet.portName", "not declared"},
		{"scheme", withLifecycle(&Lifecycle{PostStart: &Hook{HTTPGet: &HTTPCheck{Port: 80, Scheme: "file"}}}), c0 + ".lifecycle.postStart.httpGet.scheme", "file"},
		{"path", withLifecycle(&Lifecycle{PostStart: &Hook{HTTPGet: &HTTPCheck{Port: 80, Path: "x"}}}), c0 + ".lifecycle.postStart.httpGet.path", "must start with '/'"},
		{"no main task", appWith(func(a *Application) { container(a).Lifecycle = &Lifecycle{Sidecar: true} }), "spec.template.spec.containers", "at least one main task"},
		{"only init processes", procWith(func(p *Process) { proc(p).Lifecycle = &Lifecycle{Init: true} }), "spec.template.spec.processes", "at least one main task"},
		{"holder's name", appWith(func(a *Application) { container(a).Name = NetworkHolderTask }), "spec.template.spec.containers[0].name", "holds the pod's network"},
		{"process hook on a port it does not own", procWith(func(p *Process) {
			proc(p).Lifecycle = &Lifecycle{PreStop: &Hook{HTTPGet: &HTTPCheck{Port: 7491}}}
		}), "spec.template.spec.processes[0].lifecycle.preStop.httpGet.port", "not one of the task's ports"},
	})
}

func TestLifecycleAccepted(t *testing.T) {
	for name, obj := range map[string]Object{
		"sidecar": withLifecycle(&Lifecycle{Sidecar: true, PreStop: execHook("sleep 1")}),
		"init":    withLifecycle(&Lifecycle{Init: true}),
		"hooks on a port": appWith(func(a *Application) {
			c := container(a)
			c.Ports = []Port{{Name: "http", ContainerPort: 80}}
			c.Lifecycle = &Lifecycle{PostStart: &Hook{HTTPGet: &HTTPCheck{Port: 80}}, PreStop: &Hook{HTTPGet: &HTTPCheck{Port: 80}, TimeoutSeconds: 5}}
		}),
		"process hooks by name": procWith(func(p *Process) {
			proc(p).Lifecycle = &Lifecycle{PreStop: &Hook{HTTPGet: &HTTPCheck{PortName: "http", Path: "/quit"}}}
		}),
		"init process": procWith(func(p *Process) {
			first := *proc(p)
			first.ProcName, first.StartCmd, first.Lifecycle = "migrate", "./migrate", &Lifecycle{Init: true}
			first.Ports = nil
			p.Spec.Template.Spec.Processes = append([]ProcessTask{first}, *proc(p))
		}),
	} {
		Default(obj)
		if errs := Validate(obj); len(errs) > 0 {
			t.Errorf("%s: unexpected errors %v", name, errs)
		}
	}
}

// The keys decode from a spec as users write them.
func TestLifecycleDecodes(t *testing.T) {
	docs, err := Parse([]byte(`{"apiVersion":"v4","kind":"application","metadata":{"name":"web","namespace":"ns"},
		"spec":{"instance":1,"template":{"spec":{"containers":[
		{"name":"migrate","image":"busybox","lifecycle":{"init":true}},
		{"name":"web","image":"busybox","ports":[{"name":"http","containerPort":80}],
		 "lifecycle":{"preStop":{"httpGet":{"portName":"http","path":"/drain"},"timeoutSeconds":5},"postStart":{"exec":{"command":"touch /ready"}}}}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs[0].Warnings) > 0 {
		t.Errorf("warnings %v", docs[0].Warnings)
	}
	cs := docs[0].Object.(*Application).Spec.Template.Spec.Containers
	if cs[0].Lifecycle.Role() != RoleInit || cs[1].Lifecycle.Role() != "" {
		t.Errorf("roles: %q %q", cs[0].Lifecycle.Role(), cs[1].Lifecycle.Role())
	}
	if h := cs[1].Lifecycle.PreStop; h == nil || h.HTTPGet == nil || h.HTTPGet.Path != "/drain" || h.TimeoutSeconds != 5 {
		t.Errorf("preStop: %+v", h)
	}
	if h := cs[1].Lifecycle.PostStart; h == nil || h.Exec == nil || h.Exec.Command != "touch /ready" {
		t.Errorf("postStart: %+v", h)
	}
}
