package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// triggeredExit runs until the file "go" in its working directory holds an exit code, then
// exits with it.
const triggeredExit = `while [ ! -s go ]; do sleep 0.1; done; exit $(cat go)`

// exitProcess is a process workload of one instance running triggeredExit in its work dir.
func exitProcess(name string, interval int) string {
	return fmtSpec(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":"e2e","labels":{"app":%q}},
	"restartPolicy":{"policy":"OnFailure","interval":%d},"killPolicy":{"gracePeriod":1},
	"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"sh","startCmd":%q,"startGracePeriod":1,
		"resources":{"limits":{"cpu":"0.1","memory":"32"}}}]}}}}`, name, name, interval, triggeredExit)
}

// Processes and containers that end while their agent is down (SIGKILLed) are reported
// with their true exit codes once it is back: exit 0 is Finish, which OnFailure leaves
// alone, and exit 3 is Failed, which OnFailure replaces. Processes get it from their
// shim's record, containers from Docker's.
func TestExitsWhileTheAgentIsDownReachTheRestartPolicy(t *testing.T) {
	requireDocker(t)
	s := startServer(t, t.TempDir())
	a := startDockerAgent(t, s, "exits", "29200-29299")
	s.cleanupProcesses("e2e")
	s.cleanupApps("e2e")
	s.applySpec(t, exitProcess("p-ok", 10))
	s.applySpec(t, exitProcess("p-bad", 10))
	for _, name := range []string{"c-ok", "c-bad"} {
		s.applySpec(t, appSpec{name: name, ns: "e2e", restart: `{"policy":"OnFailure","interval":10}`, containers: []string{
			container("main", `while [ ! -s /tmp/go ]; do sleep 0.1; done; exit $(cat /tmp/go)`, ""),
		}}.json())
	}
	first := map[string]*v4.TaskGroup{}
	for _, name := range []string{"p-ok", "p-bad", "c-ok", "c-bad"} {
		first[name] = s.running(t, "e2e", name, 1)[0]
	}

	a.kill()
	for name, code := range map[string]string{"p-ok": "0", "p-bad": "3"} {
		pid := pidOf(first[name])
		cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
		if err != nil {
			t.Fatalf("%s: work dir of pid %d: %v", name, pid, err)
		}
		if err := os.WriteFile(filepath.Join(cwd, "go"), []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, code := range map[string]string{"c-ok": "0", "c-bad": "3"} {
		id := containerIDs(first[name])[0]
		if out, err := exec.Command("docker", "exec", id, "sh", "-c", "echo "+code+" > /tmp/go").CombinedOutput(); err != nil {
			t.Fatalf("%s: docker exec: %v: %s", name, err, out)
		}
	}
	for name, tg := range first {
		if name[0] == 'p' {
			waitUntil(t, 10*time.Second, name+" to exit while the agent is down", func() bool { return !alive(pidOf(tg)) })
		}
	}
	time.Sleep(time.Second)
	a.start()

	want := map[string]struct {
		phase string
		code  int
	}{"p-ok": {v4.StatusFinish, 0}, "p-bad": {v4.StatusFailed, 3}, "c-ok": {v4.StatusFinish, 0}, "c-bad": {v4.StatusFailed, 3}}
	// The failed runs are replaced after their interval: each run's end is caught as soon
	// as it is reported.
	ended := map[string]*v4.TaskGroup{}
	waitUntil(t, 30*time.Second, "the four runs to end", func() bool {
		for name := range want {
			if ended[name] != nil {
				continue
			}
			if tg := s.taskGroupOf("e2e", name, first[name].Metadata.Name); tg != nil && (tg.Status.Phase == v4.StatusFinish || tg.Status.Phase == v4.StatusFailed) {
				ended[name] = tg
			}
		}
		return len(ended) == len(want)
	})
	for name, w := range want {
		tg := ended[name]
		if tg.Status.Phase != w.phase || tg.Status.Tasks[0].Info.ExitCode != w.code {
			t.Errorf("%s: %s with exit code %d (%s), want %s with %d", name, tg.Status.Phase, tg.Status.Tasks[0].Info.ExitCode,
				tg.Status.Tasks[0].Message, w.phase, w.code)
		}
	}
	// OnFailure replaces the failed runs (after their 10 s interval) and leaves the
	// finished ones alone.
	for _, name := range []string{"p-bad", "c-bad"} {
		again := s.running(t, "e2e", name, 1)[0]
		if again.Metadata.Name == first[name].Metadata.Name || again.Spec.ReschedTimes != 1 {
			t.Errorf("%s: not replaced: %s (reschedTimes %d)", name, again.Metadata.Name, again.Spec.ReschedTimes)
		}
	}
	for _, name := range []string{"p-ok", "c-ok"} {
		tgs := s.taskGroups("e2e", name)
		if len(tgs) != 1 || tgs[0].Metadata.Name != first[name].Metadata.Name || tgs[0].Status.Phase != v4.StatusFinish {
			t.Errorf("%s: finished run restarted: %d task groups", name, len(tgs))
		}
	}
	// Both kinds share the namespace, and each cleanup waits for all its task groups.
	for _, name := range []string{"p-ok", "p-bad"} {
		s.mustBerth("delete", "process", name, "-n", "e2e")
	}
	for _, name := range []string{"c-ok", "c-bad"} {
		s.mustBerth("delete", "application", name, "-n", "e2e")
	}
}

// taskGroupOf returns the task group called name of owner in ns (nil when it is gone).
func (s *devServer) taskGroupOf(ns, owner, name string) *v4.TaskGroup {
	for _, tg := range s.taskGroups(ns, owner) {
		if tg.Metadata.Name == name {
			return tg
		}
	}
	return nil
}
