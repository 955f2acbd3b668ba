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
)

// triggeredExit is a startCmd that runs until the file "go" appears in its work dir and
// then exits with the code written in it.
const triggeredExit = `while [ ! -s go ]; do sleep 0.05; done; exit "$(cat go)"`

// trigger makes a triggeredExit task exit with code.
func trigger(t *testing.T, task *driver.Task, code string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(task.WorkBaseDir, "go"), []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
}

// An agent that is away when its tasks end still learns their exit codes: the shims
// recorded them.
func TestExitCodesSurviveDriverRestart(t *testing.T) {
	requireCgroups(t)
	t.Parallel()
	dataDir := t.TempDir()
	d1 := newTestDriver(t, dataDir)
	ok := testTask(t, "ns.gone.ok", &v4.ProcessTask{StartCmd: triggeredExit})
	bad := testTask(t, "ns.gone.bad", &v4.ProcessTask{StartCmd: triggeredExit})
	mustStart(t, d1, ok)
	mustStart(t, d1, bad)
	d1.Close()

	trigger(t, ok, "0")
	trigger(t, bad, "3")
	// Nobody looks while they end: give them the time to.
	time.Sleep(500 * time.Millisecond)

	d2 := newTestDriver(t, dataDir)
	for task, code := range map[*driver.Task]int{ok: 0, bad: 3} {
		st := drivertest.WaitEnded(t, d2, task.ID, 5*time.Second)
		if st.Info.ExitCode != code {
			t.Errorf("%s: exit code %d (%s), want %d", task.ID, st.Info.ExitCode, st.Info.Message, code)
		}
	}
}

// Wait delivers a task's end as it happens, and closes without a value when its context
// ends first.
func TestWaitDeliversTheExit(t *testing.T) {
	requireCgroups(t)
	t.Parallel()
	d := newTestDriver(t, t.TempDir())
	task := testTask(t, "ns.wait.one", &v4.ProcessTask{StartCmd: triggeredExit})
	mustStart(t, d, task)

	cctx, cancel := context.WithCancel(context.Background())
	abandoned, err := d.Wait(cctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case st, got := <-abandoned:
		if got {
			t.Fatalf("an abandoned wait delivered %+v", st)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an abandoned wait was not closed")
	}

	ch, err := d.Wait(context.Background(), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	trigger(t, task, "5")
	drivertest.WaitDeliversExit(t, ch, 5, 10*time.Second, "the task")

	// An ended task is delivered at once; an unknown one is an error.
	ch, err = d.Wait(context.Background(), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st := <-ch; st.Info.ExitCode != 5 {
		t.Fatalf("Wait on an ended task: %+v", st.Info)
	}
	if _, err := d.Wait(context.Background(), "ns.wait.none"); err == nil {
		t.Fatal("Wait on an unknown task succeeded")
	}
}

// The shim passes the signals it receives on to the task's process, and records the
// exit that follows.
func TestShimForwardsSignals(t *testing.T) {
	requireCgroups(t)
	t.Parallel()
	d := newTestDriver(t, t.TempDir())
	task := testTask(t, "ns.shim.term", &v4.ProcessTask{StartCmd: `trap 'exit 7' TERM; while :; do sleep 0.05; done`})
	mustStart(t, d, task)
	st, err := d.load(task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.ShimPid <= 0 || !alive(st.ShimPid, st.ShimStartTicks) {
		t.Fatalf("no live shim recorded: %+v", st)
	}
	if ps, _ := readStat(st.Pid); ps.Ppid != st.ShimPid {
		t.Fatalf("the task's process %d is the child of %d, not of its shim %d", st.Pid, ps.Ppid, st.ShimPid)
	}
	if err := syscall.Kill(st.ShimPid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if got := drivertest.WaitEnded(t, d, task.ID, 5*time.Second); got.Info.ExitCode != 7 {
		t.Fatalf("after SIGTERM to the shim: %+v, want exit code 7 from the task's trap", got.Info)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(st.ShimPid, st.ShimStartTicks) {
		if time.Now().After(deadline) {
			t.Fatal("the shim outlived its task")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The task's directory, where the shim records exits, exists before the shim runs the
// start command: a daemon's start command ends at once, and its exit was recorded before
// the driver first saved the task's state (which made the directory); a shim that could
// not record it gave up on the task, whose process then ran unwatched or not at all.
func TestShimSpecMakesTheTaskDirectory(t *testing.T) {
	d := newTestDriver(t, "")
	st := &taskState{ID: "ns.quick.daemon", PidFile: filepath.Join(t.TempDir(), "d.pid")}
	if _, err := os.Stat(d.taskDir(st.ID)); !os.IsNotExist(err) {
		t.Fatalf("the task's directory exists before its start: %v", err)
	}
	if _, err := d.shimSpec(st, shellSpec{Cmd: "sleep 30 &", Dir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(d.taskDir(st.ID)); err != nil || !fi.IsDir() {
		t.Fatalf("no task directory for the shim's exit record: %v", err)
	}
}
