package process

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/drivertest"
	"github.com/berthhq/berth/internal/shim"
)

func TestMain(m *testing.M) {
	shim.RunIfCalled() // the driver starts this test binary as its tasks' shim
	code := m.Run()
	// The tasks' cgroups are removed with them; drop their parent too.
	for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/*"} {
		dirs, _ := filepath.Glob(filepath.Join(root, testCgroupParent))
		for _, dir := range dirs {
			os.Remove(dir)
		}
	}
	os.Exit(code)
}

func TestAdoptAfterRestart(t *testing.T) {
	requireCgroups(t)
	t.Parallel()
	dataDir := t.TempDir()
	d1 := newTestDriver(t, dataDir)
	own := testTask(t, "ns.adopt.sleep", &v4.ProcessTask{ProcName: "sleep", StartCmd: "exec sleep 60"})
	daemon := testTask(t, "ns.adopt.daemon", &v4.ProcessTask{ProcName: "sleep"})
	writeScript(t, filepath.Join(daemon.WorkBaseDir, "start.sh"), daemonScript)
	daemon.Process.PidFile = filepath.Join(daemon.RunBaseDir, "app.pid")
	daemon.Process.StartCmd = "./start.sh " + daemon.Process.PidFile
	first := map[string]driver.State{}
	for _, task := range []*driver.Task{own, daemon} {
		first[task.ID] = mustStart(t, d1, task)
	}
	d1.Close() // the agent goes away; the processes stay

	d2 := newTestDriver(t, dataDir)
	list, err := d2.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("List after restart: %+v", list)
	}
	for _, st := range list {
		want := first[st.ID]
		if !st.Running || st.Info.Pid != want.Info.Pid || st.Labels[driver.LabelTask] != "sleep" || !st.Info.StartAt.Equal(want.Info.StartAt) {
			t.Errorf("adopted %s: %+v, want pid %d running", st.ID, st, want.Info.Pid)
		}
	}

	// The daemon is not the new driver's child, but its shim (a subreaper) reaped it and
	// recorded how it ended.
	pid := first[daemon.ID].Info.Pid
	syscall.Kill(pid, syscall.SIGKILL)
	st := drivertest.WaitEnded(t, d2, daemon.ID, 5*time.Second)
	if st.Info.ExitCode != 128+int(syscall.SIGKILL) || st.Info.Message != "process exited with code 137" {
		t.Fatalf("killed daemon: %+v", st.Info)
	}

	// The adopted task can be stopped by the new driver.
	if err := d2.Stop(context.Background(), own.ID, time.Second); err != nil {
		t.Fatal(err)
	}
	if alive(first[own.ID].Info.Pid, 0) {
		t.Fatal("adopted process survived Stop")
	}
}

func TestPidReuseIsNotTheTask(t *testing.T) {
	d := parallelTestDriver(t)
	task := testTask(t, "ns.reuse.sleep", &v4.ProcessTask{ProcName: "sleep", StartCmd: "exec sleep 60"})
	mustStart(t, d, task)
	// Pretend the recorded process started at another time: a pid reused by another.
	d.locks.Lock(task.ID)
	rec, _ := d.load(task.ID)
	rec.PidStartTicks++
	rec.ChildPid = -1 // not the driver's child either
	d.save(rec)
	d.locks.Unlock(task.ID)
	st, err := d.Inspect(context.Background(), task.ID)
	if err != nil || st.Running || st.Info.ExitCode != -1 {
		t.Fatalf("reused pid taken for the task: %+v %v", st.Info, err)
	}
}
