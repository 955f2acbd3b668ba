package e2e

import (
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// failedWith waits for the single task group of owner to fail and returns it.
func (s *devServer) failedWith(t *testing.T, ns, owner string) *v4.TaskGroup {
	t.Helper()
	var tg *v4.TaskGroup
	waitUntil(t, 60*time.Second, owner+" Failed", func() bool {
		tgs := s.taskGroups(ns, owner)
		if len(tgs) == 1 && tgs[0].Status.Phase == v4.StatusFailed {
			tg = tgs[0]
			return true
		}
		return false
	})
	return tg
}

// A process over its memory limit is killed by the kernel and reported OOMKilled.
func TestOutOfMemoryIsReported(t *testing.T) {
	s, pkgs, _ := startWebDemoNodes(t, "32100-32199")
	s.cleanupProcesses("e2e")
	// The shell is the task (no pid file); after the start grace it runs dd with a 64 MB
	// buffer under a 16 MB limit.
	spec := webDemo(pkgs, "e2e", "hungry", 1)
	spec.restart, spec.noPidFile, spec.memory = `{"policy":"Never"}`, true, "16"
	spec.startCmd = "sleep 2; dd if=/dev/zero of=/dev/null bs=64M count=1"
	doc := strings.Replace(spec.json(), `"procName":"web-demo"`, `"procName":"sh"`, 1)
	s.applySpec(t, doc)
	tg := s.failedWith(t, "e2e", "hungry")
	if len(tg.Status.Tasks) != 1 || !tg.Status.Tasks[0].Info.OOMKilled {
		t.Fatalf("want OOMKilled, got %+v", tg.Status.Tasks)
	}
	if desc := s.mustBerth("describe", "process", "hungry", "-n", "e2e"); !strings.Contains(desc, "OOMKilled") {
		t.Errorf("describe does not show OOMKilled:\n%s", desc)
	}
}

// Bad input fails clearly and leaves nothing half-started: each case gives a Failed task
// group whose reason names the HTTP status, the user or the path, in describe and events.
func TestBadProcessesFailWithTheirReason(t *testing.T) {
	s, pkgs, _ := startWebDemoNodes(t, "32100-32199")
	s.cleanupProcesses("e2e")
	base := webDemo(pkgs, "e2e", "", 1)
	base.restart = `{"policy":"Never"}`
	cases := []struct {
		name   string
		change func(w *webSpec)
		reason string
	}{
		{"unauthorized", func(w *webSpec) { w.pwd = "wrong" }, "401 Unauthorized"},
		{"missing", func(w *webSpec) { w.uri = pkgs.URL + "/nothing.tar.gz" }, "404 Not Found"},
		{"nouser", func(w *webSpec) { w.procUser = "no-such-user-berth" }, `user "no-such-user-berth"`},
		{"nocmd", func(w *webSpec) { w.startCmd = "./not-there.sh" }, "not-there.sh"},
		{"nopid", func(w *webSpec) { w.startCmd = "sleep 30"; w.pidFile = "${run_base_dir}/never.pid" }, "never.pid"},
	}
	for _, tc := range cases {
		w := base
		w.name = "bad-" + tc.name
		tc.change(&w)
		s.applySpec(t, w.json())
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg := s.failedWith(t, "e2e", "bad-"+tc.name)
			if !strings.Contains(tg.Status.Message, tc.reason) {
				t.Errorf("status message %q lacks %q", tg.Status.Message, tc.reason)
			}
			if strings.Contains(tg.Status.Message, "wrong") {
				t.Errorf("the password leaked into the message: %q", tg.Status.Message)
			}
			desc := s.mustBerth("describe", "process", "bad-"+tc.name, "-n", "e2e")
			if !strings.Contains(desc, tc.reason) {
				t.Errorf("describe lacks %q:\n%s", tc.reason, desc)
			}
			s.eventsSay(tc.reason, "-n", "e2e", "--for", "process/bad-"+tc.name)
			for _, task := range tg.Status.Tasks {
				if task.Info.Pid > 0 && alive(task.Info.Pid) {
					t.Errorf("pid %d of a failed start still runs", task.Info.Pid)
				}
			}
		})
	}
}
