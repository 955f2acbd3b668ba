package executor

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/process"
)

// newProcessExecutor is an executor over a real process driver in a temporary data dir,
// closed with the test; it skips without root (users and cgroups) and under -short.
func newProcessExecutor(t *testing.T) (*Executor, *process.Driver, *recorder) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (the process driver sets users and cgroups)")
	}
	if testing.Short() {
		t.Skip("starts real processes")
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	drv, err := process.New(process.Config{DataDir: filepath.Join(dir, "driver"), Logger: quiet, CgroupParent: "berth-executor-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drv.Close() })
	rec := &recorder{reports: map[string][]v4.TaskGroupStatus{}}
	e := New(Config{
		NodeName: testNode, HostIP: "127.0.0.1", DataDir: dir,
		Drivers: map[string]driver.Driver{"process": drv}, Logger: quiet, Report: rec.report,
		PollInterval: 50 * time.Millisecond,
	})
	t.Cleanup(e.Close)
	return e, drv, rec
}

// TestProcessPodIntegration runs real /bin/sh processes through the process driver: the
// env reaches the process, a process killed from outside fails the pod, and a deliberate
// kill ends another pod Finish with its process gone.
func TestProcessPodIntegration(t *testing.T) {
	e, drv, rec := newProcessExecutor(t)

	pod := func(name string) *v4.TaskGroup {
		tg := processTG(name, v4.ProcessTask{
			ProcName: "sleep",
			WorkPath: "${work_base_dir}/${processname}",
			StartCmd: `echo "$BCS_POD_ID $PORT_http $ME" > env.txt; exec sleep 60`,
			Ports:    []v4.Port{{Name: "http", HostPort: 31555}},
			Env:      []v4.EnvVar{{Name: "ME", Value: "$BCS_NODE_IP"}},
		})
		tg.Spec.KillGracePeriod = 1
		tg.Spec.Ports = []v4.AllocatedPort{{Name: "http", HostPort: 31555}}
		return tg
	}

	e.Run(context.Background(), pod("one"))
	e.Run(context.Background(), pod("two"))
	st := rec.waitPhase(t, "one", v4.StatusRunning)
	rec.waitPhase(t, "two", v4.StatusRunning)
	pid := st.Tasks[0].Info.Pid
	if pid == 0 {
		t.Fatalf("no pid: %+v", st.Tasks[0].Info)
	}
	b, err := os.ReadFile(filepath.Join(PodDir(e.cfg.DataDir, testNS, "one"), "work", "gamesvc", "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got != "one 31555 127.0.0.1" {
		t.Errorf("env seen by the process = %q", got)
	}

	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st = rec.waitPhase(t, "one", v4.StatusFailed)
	if !strings.HasPrefix(st.Message, "task sleep ") || st.Tasks[0].Info.FinishAt.IsZero() {
		t.Errorf("failed pod = %q %+v", st.Message, st.Tasks[0].Info)
	}

	st2, _ := e.Status(testNS, "two")
	pid2 := st2.Tasks[0].Info.Pid
	e.Kill(testNS, "two")
	if st2, _ = e.Status(testNS, "two"); st2.Phase != v4.StatusFinish {
		t.Errorf("killed pod = %s %q", st2.Phase, st2.Message)
	}
	if err := syscall.Kill(pid2, 0); err == nil {
		t.Error("the killed pod's process still runs")
	}
	for _, name := range []string{"one", "two"} {
		if err := e.Remove(context.Background(), testNS, name); err != nil {
			t.Errorf("remove %s: %v", name, err)
		}
	}
	if states, _ := drv.List(context.Background()); len(states) != 0 {
		t.Errorf("driver still has %d tasks", len(states))
	}
}

// ${workPath} and a pidFile under it render to the directory the process runs in, also
// when workPath is not set (the pod's work dir): "${workPath}/x" must never become /x.
func TestProcessWorkPathVariable(t *testing.T) {
	e, _, rec := newProcessExecutor(t)
	marker := fmt.Sprintf("berth-workpath-test-%d", os.Getpid())

	tests := []struct {
		name, workPath string
		wantDir        string // relative to the pod's directory
	}{
		{"no workPath", "", "work"},
		{"workPath set", "${work_base_dir}/${processname}", "work/gamesvc"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("wp%d", i)
			tg := processTG(name, v4.ProcessTask{
				ProcName: "sleep", WorkPath: tc.workPath, StartGracePeriod: 1,
				PidFile:  "${workPath}/" + marker + ".pid",
				StartCmd: "echo hi > ${workPath}/" + marker + "; echo $$ > ${pidFile}; exec sleep 60",
			})
			tg.Spec.KillGracePeriod = 1
			e.Run(context.Background(), tg)
			defer func() {
				e.Kill(testNS, name)
				if err := e.Remove(context.Background(), testNS, name); err != nil {
					t.Errorf("remove: %v", err)
				}
			}()
			st := rec.waitPhase(t, name, v4.StatusRunning)
			wd := filepath.Join(PodDir(e.cfg.DataDir, testNS, name), tc.wantDir)
			b, err := os.ReadFile(filepath.Join(wd, marker))
			if err != nil || strings.TrimSpace(string(b)) != "hi" {
				t.Errorf("${workPath}/%s in the work dir %s: %q, %v", marker, wd, b, err)
			}
			b, err = os.ReadFile(filepath.Join(wd, marker+".pid"))
			if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(st.Tasks[0].Info.Pid) {
				t.Errorf("pid file in the work dir: %q, %v; task pid %d", b, err, st.Tasks[0].Info.Pid)
			}
			for _, f := range []string{marker, marker + ".pid"} {
				if _, err := os.Stat("/" + f); err == nil {
					t.Errorf("/%s written on the host's root", f)
					os.Remove("/" + f)
				}
			}
		})
	}
}
