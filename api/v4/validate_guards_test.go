package v4

import "testing"

// An env value is handed to the kernel as a C string: a NUL byte is refused, for
// containers and processes alike (docs/spec.md "Env").
func TestEnvValueNUL(t *testing.T) {
	const c0, p0 = "spec.template.spec.containers[0]", "spec.template.spec.processes[0]"
	env := []EnvVar{{Name: "A", Value: "ok"}, {Name: "B", Value: "x\x00y"}}
	runRules(t, []ruleCase{
		{"container", appWith(func(a *Application) { container(a).Env = env }), c0 + ".env[1].value", "NUL byte (at byte 1)"},
		{"process", procWith(func(p *Process) { proc(p).Env = env }), p0 + ".env[1].value", "NUL byte"},
	})
	if errs := Validate(procWith(func(p *Process) { proc(p).Env = env[:1] })); len(errs) > 0 {
		t.Errorf("a plain value refused: %v", errs)
	}
}

// hostPort -1 on a process port is "no host port" (docs/spec.md "Ports"): accepted, and
// what would need its number is refused.
func TestProcessNoHostPort(t *testing.T) {
	const p0 = "spec.template.spec.processes[0]"
	none := func(f func(t *ProcessTask)) Object {
		return procWith(func(p *Process) {
			t := proc(p)
			t.StartCmd = "./start.sh"
			t.Ports = append(t.Ports, Port{Name: "debug", HostPort: -1, Protocol: "tcp"})
			f(t)
		})
	}
	for _, tc := range []struct {
		name string
		obj  Object
	}{
		{"declared", none(func(*ProcessTask) {})},
		{"random is 0", procWith(func(p *Process) { proc(p).Ports[0].HostPort = 0 })},
		{"check by number", none(func(t *ProcessTask) {
			t.HealthChecks = []HealthCheck{{Type: CheckTCP, TCP: &TCPCheck{Port: 9000}}}
		})},
		{"other port used", none(func(t *ProcessTask) { t.StartCmd = "./start.sh ${ports.http}" })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			Default(tc.obj)
			if errs := Validate(tc.obj); len(errs) > 0 {
				t.Fatalf("refused: %v", errs)
			}
		})
	}
	runRules(t, []ruleCase{
		{"below -1", procWith(func(p *Process) { proc(p).Ports[0].HostPort = -2 }), p0 + ".ports[0].hostPort", "-1 for none"},
		{"variable", none(func(t *ProcessTask) { t.Env = []EnvVar{{Name: "D", Value: "${ports.debug}"}} }),
			p0 + ".env[0].value", `port "debug" has no host port (` + p0 + ".ports[1].hostPort is -1)"},
		{"http check", none(func(t *ProcessTask) {
			t.HealthChecks = []HealthCheck{{Type: CheckHTTP, HTTP: &HTTPCheck{PortName: "debug", Scheme: "http", Path: "/"}}}
		}), p0 + ".healthChecks[0].http.portName", "no host port to check"},
		{"tcp check", none(func(t *ProcessTask) {
			t.HealthChecks = []HealthCheck{{Type: CheckRemoteTCP, TCP: &TCPCheck{PortName: "debug"}}}
		}), p0 + ".healthChecks[0].tcp.portName", "no host port to check"},
	})
}

// A configmap or secret file target never climbs with "..": for a process it would leave
// the work directory (${workPath}/../..), and no path needs it (docs/spec.md).
func TestItemFilePathGuards(t *testing.T) {
	const c0, p0 = "spec.template.spec.containers[0]", "spec.template.spec.processes[0]"
	cmFile := func(path string) []ConfigMapRef {
		return []ConfigMapRef{{Name: "cfg", Items: []ConfigMapItem{{Type: InjectFile, DataKey: "k", KeyOrPath: path}}}}
	}
	secFile := func(path string) []SecretRef {
		return []SecretRef{{SecretName: "s", Items: []SecretItem{{Type: InjectFile, DataKey: "k", KeyOrPath: path}}}}
	}
	runRules(t, []ruleCase{
		{"process workPath up", procWith(func(p *Process) { proc(p).ConfigMaps = cmFile("${workPath}/../../etc/cron.d/x") }),
			p0 + ".configmaps[0].items[0].keyOrPath", "'..' segments"},
		{"process absolute up", procWith(func(p *Process) { proc(p).Secrets = secFile("/data/app/../../etc/passwd") }),
			p0 + ".secrets[0].items[0].keyOrPath", "'..' segments"},
		{"process trailing", procWith(func(p *Process) { proc(p).Secrets = secFile("${work_base_dir}/..") }),
			p0 + ".secrets[0].items[0].keyOrPath", "'..' segments"},
		{"process relative", procWith(func(p *Process) { proc(p).ConfigMaps = cmFile("../x") }),
			p0 + ".configmaps[0].items[0].keyOrPath", "absolute file path"},
		{"container up", appWith(func(a *Application) { container(a).Secrets = secFile("/etc/app/../../x") }),
			c0 + ".secrets[0].items[0].keyOrPath", "'..' segments"},
		{"NUL", appWith(func(a *Application) { container(a).ConfigMaps = cmFile("/etc/a\x00b") }),
			c0 + ".configmaps[0].items[0].keyOrPath", "NUL"},
	})
	for _, path := range []string{"/data/container/path/filename.conf", "${workPath}/conf/app..conf", "${workPath}/.hidden/..x", "/a/./b"} {
		obj := procWith(func(p *Process) { proc(p).ConfigMaps = cmFile(path) })
		if errs := Validate(obj); len(errs) > 0 {
			t.Errorf("%s refused: %v", path, errs)
		}
	}
	// An env item's keyOrPath is a variable name, where ".." means nothing special.
	if errs := Validate(appWith(func(a *Application) {
		container(a).Secrets = []SecretRef{{SecretName: "s", Items: []SecretItem{{Type: InjectEnv, DataKey: "k", KeyOrPath: ".."}}}}
	})); len(errs) > 0 {
		t.Errorf("env item refused: %v", errs)
	}
}
