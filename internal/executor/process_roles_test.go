package executor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// Real processes in a process pod: the init processes run to their end in order (each
// appends to a file of the pod's work directory, which the main process reads), a
// preStop hook runs in the main process's context before its stop, and a failing init
// process fails the pod with its exit code.
func TestProcessPodRolesIntegration(t *testing.T) {
	e, _, rec := newProcessExecutor(t)
	proc := func(name, cmd string, lc *v4.Lifecycle) v4.ProcessTask {
		return v4.ProcessTask{ProcName: name, StartCmd: cmd, Lifecycle: lc, WorkPath: "${work_base_dir}"}
	}
	tg := processTG("roles",
		proc("web", "cat order > seen; exec sleep 60", &v4.Lifecycle{PreStop: &v4.Hook{Exec: &v4.ExecHook{Command: "echo stopping > prestop"}}}),
		proc("first", "echo first >> order", &v4.Lifecycle{Init: true}),
		proc("second", "sleep 0.3; echo second >> order", &v4.Lifecycle{Init: true}))
	tg.Spec.Template.Spec.Processes[0].ProcName = "sleep"
	tg.Spec.KillGracePeriod = 1
	e.Run(context.Background(), tg)
	st := rec.waitPhase(t, "roles", v4.StatusRunning)
	if st.Tasks[1].Status != v4.StatusFinish || st.Tasks[2].Status != v4.StatusFinish || st.Tasks[2].Info.ExitCode != 0 {
		t.Fatalf("init tasks %+v", st.Tasks[1:])
	}
	work := filepath.Join(PodDir(e.cfg.DataDir, testNS, "roles"), "work")
	waitFile := func(name string) string {
		var b []byte
		rec.wait(t, "roles", name, func(v4.TaskGroupStatus) bool {
			var err error
			b, err = os.ReadFile(filepath.Join(work, name))
			return err == nil && len(b) > 0
		})
		return string(b)
	}
	if got := waitFile("seen"); got != "first\nsecond\n" {
		t.Errorf("the main process saw %q", got)
	}
	e.Kill(testNS, "roles")
	if got := waitFile("prestop"); strings.TrimSpace(got) != "stopping" {
		t.Errorf("preStop wrote %q", got)
	}

	bad := processTG("bad", proc("web", "exec sleep 60", nil), proc("check", "exit 4", &v4.Lifecycle{Init: true}))
	bad.Spec.Template.Spec.Processes[0].ProcName = "sleep"
	e.Run(context.Background(), bad)
	st = rec.waitPhase(t, "bad", v4.StatusFailed)
	if !strings.Contains(st.Message, "init task check exited with code 4") {
		t.Errorf("message %q", st.Message)
	}
	for _, name := range []string{"roles", "bad"} {
		if err := e.Remove(context.Background(), testNS, name); err != nil {
			t.Errorf("remove %s: %v", name, err)
		}
	}
}
