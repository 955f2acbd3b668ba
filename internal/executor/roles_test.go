package executor

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// rolePod is a process pod of a main task "web" listed first, two init tasks and two
// sidecars, so that the start order cannot come from the spec's order.
func rolePod(name string) *v4.TaskGroup {
	task := func(n string, lc *v4.Lifecycle) v4.ProcessTask {
		return v4.ProcessTask{ProcName: n, StartCmd: "./" + n, Lifecycle: lc}
	}
	return processTG(name,
		task("web", nil),
		task("migrate", &v4.Lifecycle{Init: true}),
		task("proxy", &v4.Lifecycle{Sidecar: true}),
		task("fetch", &v4.Lifecycle{Init: true}),
		task("logs", &v4.Lifecycle{Sidecar: true}),
	)
}

// waitStarted waits until the driver started task.
func waitStarted(t *testing.T, d interface{ Started() []string }, taskID string) {
	t.Helper()
	deadline := time.Now().Add(waitDeadline)
	for !slices.Contains(d.Started(), taskID) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never started; started %v", taskID, d.Started())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func shortNames(name string, ids []string) []string {
	out := make([]string, len(ids))
	for i, s := range ids {
		out[i] = strings.TrimPrefix(s, id(name, ""))
	}
	return out
}

func TestInitTasksRunInOrderAfterSidecars(t *testing.T) {
	h := newHarness(t)
	h.run(rolePod("p"))
	for _, init := range []string{"migrate", "fetch"} {
		waitStarted(t, h.proc, id("p", init))
		if slices.Contains(h.proc.Started(), id("p", "web")) {
			t.Fatalf("web started while init task %s runs", init)
		}
		h.proc.Exit(id("p", init), 0)
	}
	st := h.rec.waitPhase(t, "p", v4.StatusRunning)
	if got, want := shortNames("p", h.proc.Started()), []string{"proxy", "logs", "migrate", "fetch", "web"}; !slices.Equal(got, want) {
		t.Errorf("start order %v, want %v", got, want)
	}
	want := map[string][2]string{"web": {"", v4.StatusRunning}, "migrate": {v4.RoleInit, v4.StatusFinish},
		"proxy": {v4.RoleSidecar, v4.StatusRunning}, "fetch": {v4.RoleInit, v4.StatusFinish}, "logs": {v4.RoleSidecar, v4.StatusRunning}}
	for _, ts := range st.Tasks {
		if w := want[ts.Name]; ts.Role != w[0] || ts.Status != w[1] {
			t.Errorf("task %s: role %q status %s, want %q %s", ts.Name, ts.Role, ts.Status, w[0], w[1])
		}
	}
	// A task that ends fails the pod as before; the init tasks keep how they ended.
	h.proc.Exit(id("p", "web"), 2)
	st = h.rec.waitPhase(t, "p", v4.StatusFailed)
	for _, ts := range st.Tasks {
		if ts.Role == v4.RoleInit && ts.Status != v4.StatusFinish {
			t.Errorf("init task %s ended %s after the pod failed, want Finish", ts.Name, ts.Status)
		}
	}
}

func TestFailingInitTaskFailsThePod(t *testing.T) {
	h := newHarness(t)
	h.run(rolePod("p"))
	waitStarted(t, h.proc, id("p", "migrate"))
	h.proc.Exit(id("p", "migrate"), 3)
	st := h.rec.waitPhase(t, "p", v4.StatusFailed)
	if !strings.Contains(st.Message, "init task migrate exited with code 3") {
		t.Errorf("message %q", st.Message)
	}
	if slices.Contains(h.proc.Started(), id("p", "fetch")) || slices.Contains(h.proc.Started(), id("p", "web")) {
		t.Errorf("tasks after a failed init task started: %v", h.proc.Started())
	}
	for _, side := range []string{"proxy", "logs"} {
		if _, stopped := h.proc.Stopped(id("p", side)); !stopped {
			t.Errorf("sidecar %s was not stopped", side)
		}
	}
}

// A kill stops the main tasks first, then the sidecars, the last started first; a
// preStop hook runs before its task's stop and counts against the grace.
func TestKillStopsSidecarsLastAfterPreStop(t *testing.T) {
	h := newHarness(t)
	tg := rolePod("p")
	tg.Spec.Template.Spec.Processes[0].Lifecycle = &v4.Lifecycle{PreStop: &v4.Hook{Exec: &v4.ExecHook{Command: "./drain"}}}
	var mu sync.Mutex
	var hookAt time.Time
	h.proc.SetExec(id("p", "web"), func(ctx context.Context, cmd string) (driver.ExecResult, error) {
		if cmd != "./drain" {
			t.Errorf("preStop ran %q", cmd)
		}
		time.Sleep(300 * time.Millisecond)
		mu.Lock()
		hookAt = time.Now()
		mu.Unlock()
		return driver.ExecResult{}, nil
	})
	h.run(tg)
	for _, init := range []string{"migrate", "fetch"} {
		waitStarted(t, h.proc, id("p", init))
		h.proc.Exit(id("p", init), 0)
	}
	h.rec.waitPhase(t, "p", v4.StatusRunning)
	h.e.Kill(testNS, "p")
	h.rec.waitPhase(t, "p", v4.StatusFinish)
	if got, want := shortNames("p", h.proc.Stops()), []string{"web", "logs", "proxy"}; !slices.Equal(got, want) {
		t.Errorf("stop order %v, want %v", got, want)
	}
	mu.Lock()
	ran := !hookAt.IsZero()
	mu.Unlock()
	if !ran {
		t.Fatal("the preStop hook did not run")
	}
	grace, _ := h.proc.Stopped(id("p", "web"))
	if full := 5 * time.Second; grace >= full-200*time.Millisecond || grace < full-2*time.Second {
		t.Errorf("web's stop grace %s: want the 5 s kill grace less the hook's 300 ms", grace)
	}
}

// A failing preStop hook is an event, and the stop goes on; a failing postStart hook
// fails the start.
func TestFailingHooks(t *testing.T) {
	var mu sync.Mutex
	var events []string
	h := newHarness(t, func(c *Config) {
		c.Event = func(ns, name, typ, reason, msg string) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, typ+" "+reason+" "+msg)
		}
	})
	failing := func(ctx context.Context, cmd string) (driver.ExecResult, error) {
		return driver.ExecResult{ExitCode: 7, Output: []byte("no " + cmd)}, nil
	}
	hook := &v4.Hook{Exec: &v4.ExecHook{Command: "hook"}}
	stop := processTG("stop", v4.ProcessTask{ProcName: "web", StartCmd: "./web", Lifecycle: &v4.Lifecycle{PreStop: hook}})
	h.proc.SetExec(id("stop", "web"), failing)
	h.run(stop)
	h.rec.waitPhase(t, "stop", v4.StatusRunning)
	h.e.Kill(testNS, "stop")
	h.rec.waitPhase(t, "stop", v4.StatusFinish)
	if _, stopped := h.proc.Stopped(id("stop", "web")); !stopped {
		t.Error("a failed preStop hook kept its task from being stopped")
	}

	start := processTG("start", v4.ProcessTask{ProcName: "web", StartCmd: "./web", Lifecycle: &v4.Lifecycle{PostStart: hook}})
	h.proc.SetExec(id("start", "web"), failing)
	h.run(start)
	st := h.rec.waitPhase(t, "start", v4.StatusFailed)
	if !strings.Contains(st.Message, "postStart hook of task web") {
		t.Errorf("message %q", st.Message)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 2 || !strings.HasPrefix(events[0], "Warning PreStopHookFailed preStop hook of task web") ||
		!strings.HasPrefix(events[1], "Warning PostStartHookFailed postStart hook of task web") {
		t.Errorf("events %q", events)
	}
}

// In a pod with roles a main task that completes leaves the others running; once every
// main task completed the sidecars are stopped and the pod is Finish. A sidecar's own
// exit fails the pod, even with code 0.
func TestMainTasksCompleteThenSidecarsStop(t *testing.T) {
	h := newHarness(t)
	job := processTG("job",
		v4.ProcessTask{ProcName: "a", StartCmd: "./a"},
		v4.ProcessTask{ProcName: "b", StartCmd: "./b"},
		v4.ProcessTask{ProcName: "logs", StartCmd: "./logs", Lifecycle: &v4.Lifecycle{Sidecar: true}})
	h.run(job)
	h.rec.waitPhase(t, "job", v4.StatusRunning)
	h.proc.Exit(id("job", "a"), 0)
	st := h.rec.wait(t, "job", "a completed", func(st v4.TaskGroupStatus) bool { return st.Tasks[0].Status == v4.StatusFinish })
	if st.Phase != v4.StatusRunning || h.proc.Running(id("job", "a")) || !h.proc.Running(id("job", "b")) {
		t.Fatalf("phase %s after one main task completed", st.Phase)
	}
	h.proc.Exit(id("job", "b"), 0)
	st = h.rec.waitPhase(t, "job", v4.StatusFinish)
	if _, stopped := h.proc.Stopped(id("job", "logs")); !stopped || st.Message != "main tasks completed" {
		t.Errorf("sidecar stopped %v, message %q", stopped, st.Message)
	}

	side := processTG("side", v4.ProcessTask{ProcName: "a", StartCmd: "./a"},
		v4.ProcessTask{ProcName: "logs", StartCmd: "./logs", Lifecycle: &v4.Lifecycle{Sidecar: true}})
	h.run(side)
	h.rec.waitPhase(t, "side", v4.StatusRunning)
	h.proc.Exit(id("side", "logs"), 0)
	if st := h.rec.waitPhase(t, "side", v4.StatusFailed); !strings.Contains(st.Message, "task logs exited with code 0") {
		t.Errorf("message %q", st.Message)
	}
}
