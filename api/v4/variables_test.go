package v4

import (
	"strings"
	"testing"
)

func TestRenderString(t *testing.T) {
	lookup := func(n string) (string, bool) {
		v, ok := map[string]string{"a": "1", "b": "${a}", "empty": ""}[n]
		return v, ok
	}
	tests := []struct{ in, want, err string }{
		{"plain", "plain", ""},
		{"${a}", "1", ""},
		{"x${a}y${a}z", "x1y1z", ""},
		{"${b}", "${a}", ""}, // replacement text is not rendered again
		{"[${empty}]", "[]", ""},
		{"$a {a} $", "$a {a} $", ""},
		{"${nope}", "", "unknown variable ${nope}"},
		{"${a", "", "unterminated"},
	}
	for _, tc := range tests {
		got, err := RenderString(tc.in, lookup)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: want error %q, got %q, %v", tc.in, tc.err, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestRenderProcessSeedVariables(t *testing.T) {
	docs, err := Parse(mustRead(t, "seed001_process_fixed.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := docs[0].Object.(*Process)
	task := p.Spec.Template.Spec.Processes[0]
	vars := Variables{Namespace: "ns-a", ProcessName: "gamesvc", InstanceID: 2, HostIP: "10.0.0.7",
		Ports: map[string]int{"http_port": 8899, "metric_port": 31005}, WorkBaseDir: "/var/lib/berth/work", RunBaseDir: "/var/lib/berth/run"}
	out, err := vars.RenderProcess(task)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"workPath":  "/var/lib/berth/work/ns-a.gamesvc.2/gamesvc",
		"pidFile":   "/var/lib/berth/run/ns-a.gamesvc.2/pid/gamesvc.pid",
		"startCmd":  "./start.sh --address 10.0.0.7 --service-port 8899",
		"stopCmd":   "./stop.sh --pidfile /var/lib/berth/run/ns-a.gamesvc.2/pid/gamesvc.pid",
		"outputDir": "/var/lib/berth/work/ns-a.gamesvc.2",
	}
	got := map[string]string{"workPath": out.WorkPath, "pidFile": out.PidFile, "startCmd": out.StartCmd, "stopCmd": out.StopCmd, "outputDir": out.URIs[0].OutputDir}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %q, want %q", k, got[k], w)
		}
	}
	env := map[string]string{}
	for _, e := range out.Env {
		env[e.Name] = e.Value
	}
	for k, w := range map[string]string{"http_port": "8899", "metric_port": "31005", "hostip": "10.0.0.7",
		"work_dir": "/var/lib/berth/work/ns-a.gamesvc.2/gamesvc/", "namespace": "ns-a", "processname": "gamesvc", "instanceid": "2"} {
		if env[k] != w {
			t.Errorf("env %s = %q, want %q", k, env[k], w)
		}
	}
	if task.StartCmd == out.StartCmd {
		t.Error("RenderProcess must not modify its input")
	}
}

func TestRenderProcessMissingPort(t *testing.T) {
	task := ProcessTask{ProcName: "a", StartCmd: "run ${ports.http}", HealthChecks: []HealthCheck{{HTTP: &HTTPCheck{Headers: map[string]string{"Host": "${hostip}"}}}}}
	if _, err := (Variables{}).RenderProcess(task); err == nil || !strings.Contains(err.Error(), "startCmd") {
		t.Fatalf("want an error naming startCmd, got %v", err)
	}
	task.StartCmd = "run"
	out, err := (Variables{HostIP: "h1"}).RenderProcess(task)
	if err != nil || out.HealthChecks[0].HTTP.Headers["Host"] != "h1" {
		t.Fatalf("map values must be rendered: %+v, %v", out.HealthChecks, err)
	}
}

// ${workPath} is where the task runs: without a workPath that is WorkBaseDir, never "",
// which would turn "${workPath}/x" into /x on the host.
func TestRenderProcessWorkPathDefault(t *testing.T) {
	vars := Variables{Namespace: "ns-a", ProcessName: "gamesvc", WorkBaseDir: "/data/pods/ns-a.g/work", RunBaseDir: "/data/pods/ns-a.g/run"}
	tests := []struct {
		name                      string
		workPath, pidFile         string
		wantWorkPath, wantPidFile string
		wantStartCmd              string
	}{
		{"no workPath", "", "${workPath}/app.pid", "", "/data/pods/ns-a.g/work/app.pid",
			"echo hi > /data/pods/ns-a.g/work/x; cat /data/pods/ns-a.g/work/app.pid"},
		{"workPath set", "${work_base_dir}/${processname}", "${workPath}/app.pid",
			"/data/pods/ns-a.g/work/gamesvc", "/data/pods/ns-a.g/work/gamesvc/app.pid",
			"echo hi > /data/pods/ns-a.g/work/gamesvc/x; cat /data/pods/ns-a.g/work/gamesvc/app.pid"},
		{"pidFile elsewhere", "", "${run_base_dir}/app.pid", "", "/data/pods/ns-a.g/run/app.pid",
			"echo hi > /data/pods/ns-a.g/work/x; cat /data/pods/ns-a.g/run/app.pid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			task := ProcessTask{ProcName: "g", WorkPath: tc.workPath, PidFile: tc.pidFile,
				StartCmd: "echo hi > ${workPath}/x; cat ${pidFile}"}
			out, err := vars.RenderProcess(task)
			if err != nil {
				t.Fatal(err)
			}
			if out.WorkPath != tc.wantWorkPath || out.PidFile != tc.wantPidFile || out.StartCmd != tc.wantStartCmd {
				t.Errorf("workPath %q, pidFile %q, startCmd %q; want %q, %q, %q",
					out.WorkPath, out.PidFile, out.StartCmd, tc.wantWorkPath, tc.wantPidFile, tc.wantStartCmd)
			}
		})
	}
}

func TestStripVariables(t *testing.T) {
	if got := stripVariables("http://${hostip}:80/${a}.tgz"); got != "http://x:80/x.tgz" {
		t.Errorf("got %q", got)
	}
}

func TestClosest(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"hospip", "hostip"}, {"lables", "labels"}, {"zzzzzzzz", ""}, {"NAMESPACE", "namespace"},
	} {
		if got := closest(tc.in, []string{"hostip", "labels", "namespace"}); got != tc.want {
			t.Errorf("closest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
