package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// berth stop and start with real processes: instance 1 of two is stopped, its process
// ends and no new one runs for it (restart policy Always) while instance 0 runs on;
// berth start runs it again, on its node.
func TestStopAndStartInstance(t *testing.T) {
	requireRoot(t)
	s := startServer(t, t.TempDir())
	startAgent(t, s, "stopper", "31700-31749")
	const ns = "stope2e"
	s.cleanupProcesses(ns)
	spec := httpdProcess{name: "sweb", ns: ns, instances: 2, prepare: "echo hi > www/index.html", cpu: "0.1"}.json()
	s.applySpec(t, strings.Replace(spec, `"policy":"Never"`, `"policy":"Always"`, 1))
	byIndex := func(tgs []*v4.TaskGroup) map[int]*v4.TaskGroup {
		out := map[int]*v4.TaskGroup{}
		for _, tg := range tgs {
			out[tg.Spec.Index] = tg
		}
		return out
	}
	process := func() *v4.Process {
		var p v4.Process
		if err := json.Unmarshal([]byte(s.mustBerth("get", "process", "sweb", "-n", ns, "-o", "json")), &p); err != nil {
			t.Fatal(err)
		}
		return &p
	}
	before := byIndex(s.running(t, ns, "sweb", 2))
	pid0, pid1 := pidOf(before[0]), pidOf(before[1])
	if !alive(pid0) || !alive(pid1) {
		t.Fatalf("pids %d and %d do not run", pid0, pid1)
	}

	start := time.Now()
	s.mustBerth("stop", "process", "sweb", "1", "-n", ns)
	waitUntil(t, 30*time.Second, "instance 1's process gone", func() bool { return !alive(pid1) })
	t.Logf("stop: the process ended %v after the command", time.Since(start).Round(time.Millisecond))
	waitUntil(t, 30*time.Second, "the status says 1 stopped", func() bool {
		st := process().Status
		return st.Stopped == 1 && st.Running == 1 && st.Instances == 2
	})
	// It stays stopped: for a while, no new run of instance 1, and instance 0 runs on.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		tgs := s.taskGroups(ns, "sweb")
		cur := byIndex(tgs)
		if len(tgs) != 2 || cur[1].Metadata.Name != before[1].Metadata.Name || cur[1].Status.Phase == v4.StatusRunning {
			t.Fatalf("instance 1 was restarted or replaced: %d task groups, instance 1 %s %s", len(tgs), cur[1].Metadata.Name, cur[1].Status.Phase)
		}
		if !alive(pid0) || cur[0].Metadata.Name != before[0].Metadata.Name {
			t.Fatalf("instance 0 stopped too")
		}
	}
	if out := s.mustBerth("describe", "process", "sweb", "-n", ns); !strings.Contains(out, "1 stopped") || !strings.Contains(out, "Stopped Instances:") {
		t.Fatalf("describe does not show the stopped instance:\n%s", out)
	}
	s.eventsSay("instance 1 stopped", "-n", ns)

	start = time.Now()
	s.mustBerth("start", "process", "sweb", "1", "-n", ns)
	after := byIndex(s.running(t, ns, "sweb", 2))
	t.Logf("start: instance 1 Running %v after the command", time.Since(start).Round(time.Millisecond))
	if after[1].Metadata.Name == before[1].Metadata.Name || !alive(pidOf(after[1])) || after[1].Spec.Node != before[1].Spec.Node {
		t.Fatalf("instance 1 after start: %s on %s, pid %d", after[1].Metadata.Name, after[1].Spec.Node, pidOf(after[1]))
	}
	if after[0].Metadata.Name != before[0].Metadata.Name || !alive(pid0) {
		t.Fatalf("instance 0 was replaced by the start")
	}
	waitUntil(t, 30*time.Second, "the status says 2 running", func() bool {
		st := process().Status
		return st.Stopped == 0 && st.Running == 2
	})
}
