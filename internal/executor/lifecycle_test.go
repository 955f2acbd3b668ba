package executor

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/fake"
)

func TestStartInOrderReachesRunning(t *testing.T) {
	h := newHarness(t)
	h.run(containerTG("web", "a", "b", "c"))
	st := h.rec.waitPhase(t, "web", v4.StatusRunning)

	want := []string{id("web", "a"), id("web", "b"), id("web", "c")}
	if got := h.docker.Started(); !slices.Equal(got, want) {
		t.Fatalf("start order = %v, want %v", got, want)
	}
	if got := h.rec.phases("web"); !slices.Equal(got, []string{v4.StatusStaging, v4.StatusStarting, v4.StatusRunning}) {
		t.Errorf("phases = %v", got)
	}
	for i, ts := range st.Tasks {
		if ts.Status != v4.StatusRunning || ts.Info.Pid == 0 || ts.Info.ID != want[i] {
			t.Errorf("task %d = %+v", i, ts)
		}
		if ts.Info.NodeAddress != testHostIP || ts.Info.IPAddress != testHostIP {
			t.Errorf("task %d addresses = %q %q, want the host IP", i, ts.Info.NodeAddress, ts.Info.IPAddress)
		}
	}
	if st.HostIP != testHostIP || st.StartedAt.IsZero() || st.Updated.IsZero() || st.Healthy != nil {
		t.Errorf("group status = %+v", st)
	}
	tk, _ := h.docker.Task(id("web", "b"))
	if tk.Labels[driver.LabelTaskGroup] != testNS+"/web" || tk.Labels[driver.LabelTask] != "b" || tk.Labels[driver.LabelNode] != testNode {
		t.Errorf("labels = %v", tk.Labels)
	}
	if tk.KillGrace != 3*time.Second || tk.WorkBaseDir != PodDir(h.dir, testNS, "web")+"/work" || tk.LogDir != PodDir(h.dir, testNS, "web")+"/logs" {
		t.Errorf("task = %+v", tk)
	}
	for _, d := range []string{"work", "run", "logs"} {
		if _, err := os.Stat(PodDir(h.dir, testNS, "web") + "/" + d); err != nil {
			t.Errorf("pod directory: %v", err)
		}
	}
}

func TestFirstStartFailureStopsStartedTasks(t *testing.T) {
	h := newHarness(t)
	h.docker.FailNextStart("b", errors.New("pull busybox: 404"))
	h.run(containerTG("web", "a", "b", "c"))
	st := h.rec.waitPhase(t, "web", v4.StatusFailed)

	if got := h.docker.Started(); !slices.Equal(got, []string{id("web", "a")}) {
		t.Fatalf("started = %v, want only the first task", got)
	}
	if grace, ok := h.docker.Stopped(id("web", "a")); !ok || grace != time.Second {
		t.Errorf("first task stopped = %v %v, want force stop with 1s", grace, ok)
	}
	const msg = "start task b: pull busybox: 404"
	if st.Message != msg {
		t.Errorf("group message = %q", st.Message)
	}
	for _, ts := range st.Tasks {
		if ts.Status != v4.StatusFailed || ts.Message != msg {
			t.Errorf("task %s = %s %q", ts.Name, ts.Status, ts.Message)
		}
	}
	if a := st.Tasks[0].Info; a.Pid == 0 || a.FinishAt.IsZero() {
		t.Errorf("started task info = %+v, want its pid and finish time", a)
	}
	if st.FinishedAt.IsZero() {
		t.Error("FinishedAt not set")
	}
}

func TestGroupFailsWhenItCannotRun(t *testing.T) {
	tests := []struct {
		name string
		tg   func() *v4.TaskGroup
		mod  func(*Config)
		msg  string
	}{
		{"no docker driver", func() *v4.TaskGroup { return containerTG("web", "a") },
			func(c *Config) { delete(c.Drivers, "docker") }, "no docker driver on this node"},
		{"unknown variable", func() *v4.TaskGroup {
			return processTG("p", v4.ProcessTask{ProcName: "svc", StartCmd: "./start ${nope}"})
		}, nil, "process svc: startCmd: unknown variable ${nope}"},
		{"bad limit", func() *v4.TaskGroup {
			tg := containerTG("web", "a")
			tg.Spec.Template.Spec.Containers[0].Resources = &v4.Resources{Limits: &v4.ResourceList{CPU: "lots"}}
			return tg
		}, nil, `task a: limits.cpu: "lots" is not a number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mods []func(*Config)
			if tt.mod != nil {
				mods = append(mods, tt.mod)
			}
			h := newHarness(t, mods...)
			tg := tt.tg()
			h.run(tg)
			st := h.rec.waitPhase(t, tg.Metadata.Name, v4.StatusFailed)
			if st.Message != tt.msg {
				t.Errorf("message = %q, want %q", st.Message, tt.msg)
			}
			if len(h.docker.Started())+len(h.proc.Started()) != 0 {
				t.Error("a task started")
			}
		})
	}
}

// exitCase is a way for a task to end, and how the executor must report it.
type exitCase struct {
	name     string
	end      func(h *harness)
	msg      string
	exitCode int
	oom      bool
	phase    string // of the task group: Finish for a clean exit, else Failed
}

func TestExitEndsGroup(t *testing.T) {
	tests := []exitCase{
		{"exit code", func(h *harness) { h.docker.Exit(id("web", "b"), 2) }, "exited with code 2", 2, false, v4.StatusFailed},
		{"exit zero", func(h *harness) { h.docker.Exit(id("web", "b"), 0) }, "exited with code 0", 0, false, v4.StatusFinish},
		{"oom", func(h *harness) { h.docker.OOM(id("web", "b")) }, "killed: out of memory", 137, true, v4.StatusFailed},
		{"gone", func(h *harness) { _ = h.docker.Remove(context.Background(), id("web", "b")) }, "is gone: the driver no longer has it", 0, false, v4.StatusFailed},
	}
	// Each end is seen through the driver's Wait (no polling: the safety net is an hour
	// away), and through polling alone for a driver that cannot wait.
	for _, tt := range tests {
		for _, how := range []string{"waited", "polled"} {
			t.Run(tt.name+"/"+how, func(t *testing.T) { testExitEndsGroup(t, tt, how == "polled") })
		}
	}
}

// noWait is a driver that cannot wait for its tasks.
type noWait struct{ *fake.Driver }

func (noWait) Wait(context.Context, string) (<-chan driver.State, error) {
	return nil, errors.New("this driver cannot wait")
}

func testExitEndsGroup(t *testing.T, tt exitCase, polled bool) {
	h := newHarness(t, func(c *Config) {
		c.PollInterval = time.Hour
		if polled {
			c.Drivers["docker"] = noWait{c.Drivers["docker"].(*fake.Driver)}
		}
	})
	h.run(containerTG("web", "a", "b", "c"))
	h.rec.waitPhase(t, "web", v4.StatusRunning)
	tt.end(h)
	st := h.rec.waitPhase(t, "web", tt.phase)

	for _, other := range []string{"a", "c"} {
		if grace, ok := h.docker.Stopped(id("web", other)); !ok || grace != time.Second {
			t.Errorf("task %s stopped = %v %v, want a force stop", other, grace, ok)
		}
	}
	if _, ok := h.docker.Stopped(id("web", "b")); ok {
		t.Error("the ended task was stopped again")
	}
	if !slices.Equal(taskStatuses(st), []string{tt.phase, tt.phase, tt.phase}) {
		t.Errorf("statuses = %v", taskStatuses(st))
	}
	if b := st.Tasks[1]; b.Message != tt.msg || b.Info.ExitCode != tt.exitCode || b.Info.OOMKilled != tt.oom {
		t.Errorf("ended task = %q %+v", b.Message, b.Info)
	}
	if st.Message != "task b "+tt.msg || st.Tasks[0].Message != "stopped: task b "+tt.msg {
		t.Errorf("messages = %q, %q", st.Message, st.Tasks[0].Message)
	}
	for _, ts := range st.Tasks {
		if tt.name != "gone" || ts.Name != "b" {
			if ts.Info.FinishAt.IsZero() || ts.Info.Pid == 0 {
				t.Errorf("task %s info = %+v", ts.Name, ts.Info)
			}
		}
	}
	// Terminal is final: nothing more is reported.
	n := len(h.rec.all("web"))
	time.Sleep(30 * time.Millisecond)
	if len(h.rec.all("web")) != n {
		t.Error("reports after Failed")
	}
}

func TestKill(t *testing.T) {
	tests := []struct {
		name      string
		killGrace int
		want      time.Duration
	}{
		{"policy grace", 7, 7 * time.Second},
		{"min one second", 0, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			tg := containerTG("web", "a", "b")
			tg.Spec.KillGracePeriod = tt.killGrace
			h.run(tg)
			h.rec.waitPhase(t, "web", v4.StatusRunning)
			h.e.Kill(testNS, "web")

			if got := h.rec.phases("web"); !slices.Equal(got, []string{v4.StatusStaging, v4.StatusStarting, v4.StatusRunning, v4.StatusKilling, v4.StatusFinish}) {
				t.Errorf("phases = %v", got)
			}
			st, _ := h.e.Status(testNS, "web")
			for _, ts := range st.Tasks {
				if ts.Status != v4.StatusFinish || ts.Message != "killed by berth" || ts.Info.FinishAt.IsZero() {
					t.Errorf("task %s = %+v", ts.Name, ts)
				}
				if grace, ok := h.docker.Stopped(id("web", ts.Name)); !ok || grace != tt.want {
					t.Errorf("task %s stopped = %v %v, want %v", ts.Name, grace, ok, tt.want)
				}
			}
			n := len(h.rec.all("web"))
			h.e.Kill(testNS, "web") // ended: a no-op
			h.e.Kill(testNS, "nope")
			if len(h.rec.all("web")) != n {
				t.Error("a second kill reported")
			}
		})
	}
}

func TestKillDuringStart(t *testing.T) {
	h := newHarness(t)
	h.docker.SetStartHook(func(ctx context.Context, tk *driver.Task) error {
		if tk.Name == "b" {
			<-ctx.Done() // a slow pull, interrupted by the kill
			return ctx.Err()
		}
		return nil
	})
	h.run(containerTG("web", "a", "b"))
	h.rec.wait(t, "web", "task a started", func(st v4.TaskGroupStatus) bool { return st.Tasks[0].Info.Pid != 0 })
	h.e.Kill(testNS, "web")
	st, _ := h.e.Status(testNS, "web")
	if st.Phase != v4.StatusFinish || st.Message != "killed by berth" {
		t.Fatalf("status = %s %q", st.Phase, st.Message)
	}
	if _, ok := h.docker.Stopped(id("web", "a")); !ok {
		t.Error("the started task was not stopped")
	}
}

func TestStartBoundedByRunContext(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	h.docker.SetStartHook(func(sctx context.Context, tk *driver.Task) error {
		if tk.Name == "b" {
			cancel()
			<-sctx.Done()
			return sctx.Err()
		}
		return nil
	})
	h.e.Run(ctx, containerTG("web", "a", "b"))
	st := h.rec.waitPhase(t, "web", v4.StatusFailed)
	if !strings.Contains(st.Message, "context canceled") {
		t.Errorf("message = %q", st.Message)
	}
	if _, ok := h.docker.Stopped(id("web", "a")); !ok {
		t.Error("the started task was not stopped")
	}
}

func TestRunIsIdempotent(t *testing.T) {
	h := newHarness(t)
	tg := containerTG("web", "a")
	h.run(tg)
	h.run(tg)
	h.rec.waitPhase(t, "web", v4.StatusRunning)
	h.run(tg)
	if got := h.docker.Started(); len(got) != 1 {
		t.Errorf("started = %v", got)
	}
	if refs := h.e.List(); len(refs) != 1 || refs[0].Name != "web" || refs[0].Status.Phase != v4.StatusRunning {
		t.Errorf("List = %+v", refs)
	}
}

func TestCloseLeavesTasksRunning(t *testing.T) {
	h := newHarness(t)
	h.run(containerTG("web", "a", "b"))
	h.rec.waitPhase(t, "web", v4.StatusRunning)
	h.e.Close()
	n := len(h.rec.all("web"))
	h.docker.Exit(id("web", "a"), 1) // nobody monitors any more
	time.Sleep(30 * time.Millisecond)
	if !h.docker.Running(id("web", "b")) {
		t.Error("a task stopped on Close")
	}
	if _, ok := h.docker.Stopped(id("web", "b")); ok {
		t.Error("Close stopped a task")
	}
	if len(h.rec.all("web")) != n {
		t.Error("reports after Close")
	}
	h.run(containerTG("other", "a")) // closed: ignored
	if len(h.docker.Started()) != 2 {
		t.Error("Run after Close started something")
	}
}

func TestRemove(t *testing.T) {
	h := newHarness(t)
	h.run(containerTG("web", "a", "b"))
	h.rec.waitPhase(t, "web", v4.StatusRunning)
	// Remove of a running pod kills it first.
	if err := h.e.Remove(context.Background(), testNS, "web"); err != nil {
		t.Fatal(err)
	}
	if got := h.rec.phases("web"); got[len(got)-1] != v4.StatusFinish {
		t.Errorf("phases = %v", got)
	}
	if _, ok := h.docker.Task(id("web", "a")); ok {
		t.Error("task not removed from the driver")
	}
	if _, err := os.Stat(PodDir(h.dir, testNS, "web")); !os.IsNotExist(err) {
		t.Errorf("pod directory: %v", err)
	}
	if _, ok := h.e.Status(testNS, "web"); ok {
		t.Error("pod still known")
	}
	if err := h.e.Remove(context.Background(), testNS, "web"); err != nil {
		t.Errorf("second Remove: %v", err)
	}
	// Removed, it can run again.
	h.run(containerTG("web", "a"))
	h.rec.waitPhase(t, "web", v4.StatusRunning)
}

func TestLogsAndActions(t *testing.T) {
	h := newHarness(t)
	h.run(processTG("p", v4.ProcessTask{ProcName: "one", StartCmd: "./one"}, v4.ProcessTask{ProcName: "two", StartCmd: "./two"}))
	h.rec.waitPhase(t, "p", v4.StatusRunning)
	h.proc.SetLogs(id("p", "one"), "1\n2\n3\n")
	h.proc.SetLogs(id("p", "two"), "two\n")

	read := func(task string, opts driver.LogOptions) string {
		rc, err := h.e.Logs(context.Background(), testNS, "p", task, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, _ := io.ReadAll(rc)
		return string(b)
	}
	if got := read("", driver.LogOptions{Tail: 2}); got != "2\n3\n" {
		t.Errorf("logs of the first task = %q", got)
	}
	if got := read("two", driver.LogOptions{}); got != "two\n" {
		t.Errorf("logs of two = %q", got)
	}
	if _, err := h.e.Logs(context.Background(), testNS, "p", "three", driver.LogOptions{}); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("unknown task: %v", err)
	}
	if _, err := h.e.Logs(context.Background(), testNS, "nope", "", driver.LogOptions{}); !errors.Is(err, ErrUnknownPod) {
		t.Errorf("unknown pod: %v", err)
	}
	if err := h.e.Action(context.Background(), testNS, "p", "two", "reload"); err != nil {
		t.Fatal(err)
	}
	if err := h.e.Action(context.Background(), testNS, "p", "", "restart"); err != nil {
		t.Fatal(err)
	}
	if err := h.e.Signal(context.Background(), testNS, "p", "", syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if err := h.e.Signal(context.Background(), testNS, "p", "three", syscall.SIGUSR1); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("signal to an unknown task: %v", err)
	}
	if got := h.proc.Actions(id("p", "one")); !slices.Equal(got, []string{"restart", "signal 10"}) {
		t.Errorf("actions of one = %v", got)
	}
	if got := h.proc.Actions(id("p", "two")); !slices.Equal(got, []string{"reload", "restart", "signal 10"}) {
		t.Errorf("actions of two = %v", got)
	}
}

func TestCloseDuringStartFailsPod(t *testing.T) {
	h := newHarness(t)
	h.docker.SetStartHook(func(ctx context.Context, tk *driver.Task) error {
		if tk.Name == "b" {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	h.run(containerTG("web", "a", "b"))
	h.rec.wait(t, "web", "task a started", func(st v4.TaskGroupStatus) bool { return st.Tasks[0].Info.Pid != 0 })
	h.e.Close()
	st, _ := h.e.Status(testNS, "web")
	if st.Phase != v4.StatusFailed {
		t.Errorf("phase = %s, want Failed: half a pod cannot be adopted", st.Phase)
	}
	if _, ok := h.docker.Stopped(id("web", "a")); !ok {
		t.Error("the started task was not stopped")
	}
	if err := h.e.Remove(context.Background(), testNS, "web"); err != nil {
		t.Errorf("Remove of the ended pod after Close: %v", err)
	}
}

func TestRemoveRefusedAfterCloseWhileRunning(t *testing.T) {
	h := newHarness(t)
	h.run(containerTG("web", "a"))
	h.rec.waitPhase(t, "web", v4.StatusRunning)
	h.e.Close()
	if err := h.e.Remove(context.Background(), testNS, "web"); err == nil {
		t.Error("Remove of a running pod after Close succeeded")
	}
	if !h.docker.Running(id("web", "a")) {
		t.Error("the task stopped")
	}
}
