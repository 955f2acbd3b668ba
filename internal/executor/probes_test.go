package executor

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// answers is an Exec that answers each command with the exit code set for it (0 unless
// set) and counts the calls.
type answers struct {
	mu    sync.Mutex
	codes map[string]int
	calls map[string]int
}

func newAnswers() *answers { return &answers{codes: map[string]int{}, calls: map[string]int{}} }

func (a *answers) set(cmd string, code int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.codes[cmd] = code
}

func (a *answers) count(cmd string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls[cmd]
}

func (a *answers) exec(_ context.Context, cmd string) (driver.ExecResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls[cmd]++
	return driver.ExecResult{ExitCode: a.codes[cmd], Output: []byte(cmd + " says no")}, nil
}

func command(role, cmd string, failures int) v4.HealthCheck {
	return v4.HealthCheck{Type: v4.CheckCommand, Role: role, Command: &v4.CommandCheck{Value: cmd}, IntervalSeconds: 2, ConsecutiveFailures: failures}
}

func readyOf(st v4.TaskGroupStatus) bool {
	tg := &v4.TaskGroup{Status: st}
	ok, _ := tg.Readiness()
	return ok
}

// A failing readiness check takes the pod out of its services without killing it, and
// its success brings it back; a liveness check's success does not make it ready.
func TestReadinessNeverKills(t *testing.T) {
	h := newHarness(t)
	ans := newAnswers()
	ans.set("./ready", 1)
	h.proc.SetExec(id("p", "web"), ans.exec)
	h.run(processTG("p", v4.ProcessTask{ProcName: "web", StartCmd: "./web",
		HealthChecks: []v4.HealthCheck{command(v4.ProbeReadiness, "./ready", 2), command("", "./alive", 3)}}))
	st := h.rec.wait(t, "p", "not ready after 2 failures", func(st v4.TaskGroupStatus) bool {
		return st.Ready != nil && !*st.Ready && len(st.Tasks) == 1 && st.Tasks[0].Ready != nil
	})
	if st.Phase != v4.StatusRunning || st.Healthy == nil || !*st.Healthy || readyOf(st) {
		t.Fatalf("phase %s healthy %v ready %v: want a running, healthy pod out of its services", st.Phase, st.Healthy, readyOf(st))
	}
	if st.Tasks[0].ReadyMessage == "" {
		t.Error("no reason for not being ready")
	}
	ans.set("./ready", 0)
	st = h.rec.wait(t, "p", "ready", func(st v4.TaskGroupStatus) bool { return st.Ready != nil && *st.Ready })
	if !readyOf(st) || st.Phase != v4.StatusRunning {
		t.Errorf("ready %v phase %s", readyOf(st), st.Phase)
	}
}

// Liveness and readiness wait for the startup check; a startup check that keeps failing
// kills the pod.
func TestStartupGatesTheOtherChecks(t *testing.T) {
	h := newHarness(t)
	ans := newAnswers()
	ans.set("./started", 1)
	h.proc.SetExec(id("p", "web"), ans.exec)
	h.run(processTG("p", v4.ProcessTask{ProcName: "web", StartCmd: "./web", HealthChecks: []v4.HealthCheck{
		command(v4.ProbeStartup, "./started", 50), command(v4.ProbeReadiness, "./ready", 1), command(v4.ProbeLiveness, "./alive", 1)}}))
	h.rec.wait(t, "p", "startup failures", func(st v4.TaskGroupStatus) bool {
		return len(st.Tasks) == 1 && st.Tasks[0].ConsecutiveFailures >= 3
	})
	if n, m := ans.count("./ready"), ans.count("./alive"); n+m != 0 {
		t.Fatalf("readiness ran %d and liveness %d times before the startup check passed", n, m)
	}
	ans.set("./started", 0)
	st := h.rec.wait(t, "p", "ready", func(st v4.TaskGroupStatus) bool { return st.Ready != nil && *st.Ready })
	if ans.count("./ready") == 0 || ans.count("./alive") == 0 || !readyOf(st) {
		t.Errorf("readiness %d, liveness %d runs; ready %v", ans.count("./ready"), ans.count("./alive"), readyOf(st))
	}

	var never atomic.Int32
	h.proc.SetExec(id("q", "web"), func(context.Context, string) (driver.ExecResult, error) {
		never.Add(1)
		return driver.ExecResult{ExitCode: 1}, nil
	})
	h.run(processTG("q", v4.ProcessTask{ProcName: "web", StartCmd: "./web", HealthChecks: []v4.HealthCheck{command(v4.ProbeStartup, "./started", 2)}}))
	st = h.rec.waitPhase(t, "q", v4.StatusFailed)
	if !st.HealthKilled {
		t.Errorf("a failed startup check did not kill the pod: %+v", st)
	}
}

// A BCS check (no role) keeps BCS's meaning in berth: it kills after its failures, and the
// pod reports no readiness of its own, so its health decides its endpoints as before.
func TestChecksWithoutRolesKeepTheirMeaning(t *testing.T) {
	h := newHarness(t)
	ans := newAnswers()
	ans.set("./alive", 1)
	h.proc.SetExec(id("p", "web"), ans.exec)
	h.run(processTG("p", v4.ProcessTask{ProcName: "web", StartCmd: "./web", HealthChecks: []v4.HealthCheck{command("", "./alive", 2)}}))
	st := h.rec.waitPhase(t, "p", v4.StatusFailed)
	if !st.HealthKilled || st.Ready != nil {
		t.Errorf("health killed %v, ready %v", st.HealthKilled, st.Ready)
	}
	for _, r := range h.rec.all("p") {
		if r.Ready != nil || r.Tasks[0].Ready != nil {
			t.Fatalf("a pod without roles reported readiness: %+v", r)
		}
	}
}
