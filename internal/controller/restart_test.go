package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

func TestPlanRestart(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	ended := now.Add(-2 * time.Second)
	tg := func(phase string, resched int, ran time.Duration) *v4.TaskGroup {
		return &v4.TaskGroup{
			Spec:   v4.TaskGroupSpec{ReschedTimes: resched},
			Status: v4.TaskGroupStatus{Phase: phase, StartedAt: ended.Add(-ran), FinishedAt: ended},
		}
	}
	pol := func(policy string) *v4.RestartPolicy {
		return &v4.RestartPolicy{Policy: policy, Interval: 5, Backoff: 10, MaxTimes: 3}
	}
	tests := []struct {
		name    string
		p       *v4.RestartPolicy
		tg      *v4.TaskGroup
		restart bool
		delay   time.Duration // from the end
		attempt int
		reason  string
	}{
		{"never", pol(v4.RestartNever), tg(v4.StatusFailed, 0, time.Second), false, 0, 0, "Never"},
		{"onfailure failed", pol(v4.RestartOnFailure), tg(v4.StatusFailed, 0, time.Second), true, 5 * time.Second, 1, ""},
		{"onfailure lost: after the grace", pol(v4.RestartOnFailure), tg(v4.StatusLost, 0, time.Second), true, defaultLostGrace, 1, ""},
		{"onfailure lost: hostRetainTime is the grace", &v4.RestartPolicy{Policy: v4.RestartOnFailure, HostRetainTime: 30},
			tg(v4.StatusLost, 0, time.Second), true, 30 * time.Second, 1, ""},
		{"default policy lost", nil, tg(v4.StatusLost, 0, time.Second), true, defaultLostGrace, 1, ""},
		{"onfailure lost: maxtimes", pol(v4.RestartOnFailure), tg(v4.StatusLost, 3, time.Second), false, 0, 0, "maxtimes 3 reached"},
		{"onfailure finish", pol(v4.RestartOnFailure), tg(v4.StatusFinish, 0, time.Second), false, 0, 0, "does not restart Finish"},
		{"always lost", pol(v4.RestartAlways), tg(v4.StatusLost, 0, time.Second), true, 5 * time.Second, 1, ""},
		{"always finish", pol(v4.RestartAlways), tg(v4.StatusFinish, 1, time.Second), true, 15 * time.Second, 2, ""},
		{"always killed", pol(v4.RestartAlways), tg(v4.StatusKilled, 0, time.Second), false, 0, 0, "does not restart Killed"},
		{"backoff grows", pol(v4.RestartOnFailure), tg(v4.StatusFailed, 2, time.Second), true, 25 * time.Second, 3, ""},
		{"maxtimes", pol(v4.RestartOnFailure), tg(v4.StatusFailed, 3, time.Second), false, 0, 0, "maxtimes 3 reached"},
		{"reset after 30 min", pol(v4.RestartOnFailure), tg(v4.StatusFailed, 3, 31*time.Minute), true, 5 * time.Second, 1, ""},
		{"nil policy is OnFailure", nil, tg(v4.StatusFailed, 7, time.Second), true, crashLoopFloor, 8, ""},
		{"capped", &v4.RestartPolicy{Policy: v4.RestartAlways, Interval: 90000}, tg(v4.StatusFailed, 0, time.Second), true, maxRestartDelay, 1, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := planRestart(tc.p, tc.tg, now)
			if got.restart != tc.restart || (tc.restart && (got.at.Sub(ended) != tc.delay || got.attempt != tc.attempt)) {
				t.Errorf("got %+v (delay %v), want restart=%v delay %v attempt %d", got, got.at.Sub(ended), tc.restart, tc.delay, tc.attempt)
			}
			if !tc.restart && !strings.Contains(got.reason, tc.reason) {
				t.Errorf("reason %q, want %q", got.reason, tc.reason)
			}
		})
	}
}

// TestCrashLoopFloor: a run that ends within 10 minutes of its start waits at least a floor
// that doubles with each such run in a row, up to 5 minutes; a long run, or a lost node,
// does not count.
func TestCrashLoopFloor(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	ended := now.Add(-time.Second)
	run := func(phase string, loops int, ran time.Duration) *v4.TaskGroup {
		tg := &v4.TaskGroup{Spec: v4.TaskGroupSpec{CrashLoops: loops}, Status: v4.TaskGroupStatus{Phase: phase, FinishedAt: ended}}
		if ran >= 0 {
			tg.Status.StartedAt = ended.Add(-ran)
		}
		return tg
	}
	always := &v4.RestartPolicy{Policy: v4.RestartAlways}
	slow := &v4.RestartPolicy{Policy: v4.RestartOnFailure, Interval: 60}
	tests := []struct {
		name      string
		p         *v4.RestartPolicy
		tg        *v4.TaskGroup
		delay     time.Duration
		loops     int
		crashLoop bool
	}{
		{"first quick exit", nil, run(v4.StatusFailed, 0, time.Second), 2 * time.Second, 1, true},
		{"never started", nil, run(v4.StatusFailed, 0, -1), 2 * time.Second, 1, true},
		{"fourth in a row", nil, run(v4.StatusFailed, 3, time.Second), 16 * time.Second, 4, true},
		{"capped at 5 min", always, run(v4.StatusFinish, 40, time.Minute), 5 * time.Minute, 41, true},
		{"policy waits longer", slow, run(v4.StatusFailed, 2, time.Second), 60 * time.Second, 3, false},
		{"ran 10 minutes: starts over", nil, run(v4.StatusFailed, 6, 10*time.Minute), 0, 0, false},
		{"lost node keeps the count", always, run(v4.StatusLost, 5, time.Second), 0, 5, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := planRestart(tc.p, tc.tg, now)
			if !got.restart || got.at.Sub(ended) != tc.delay || got.crashLoops != tc.loops || got.crashLoop != tc.crashLoop {
				t.Errorf("got delay %v, crashLoops %d, crashLoop %v; want %v, %d, %v",
					got.at.Sub(ended), got.crashLoops, got.crashLoop, tc.delay, tc.loops, tc.crashLoop)
			}
		})
	}
}

func TestLastExit(t *testing.T) {
	for _, tt := range []struct {
		st   v4.TaskGroupStatus
		want string
	}{
		{v4.TaskGroupStatus{Tasks: []v4.TaskStatus{{Name: "a"}, {Name: "web", Info: v4.ContainerInfo{ExitCode: 3}}}}, "task web exited with code 3"},
		{v4.TaskGroupStatus{Tasks: []v4.TaskStatus{{Name: "web", Info: v4.ContainerInfo{ExitCode: 137, OOMKilled: true}}}}, "task web was killed for lack of memory (OOM)"},
		{v4.TaskGroupStatus{HealthKilled: true, Message: "x"}, "killed after failing its health checks"},
		{v4.TaskGroupStatus{Phase: v4.StatusFailed, Message: "start: no such file"}, "start: no such file"},
		{v4.TaskGroupStatus{Phase: v4.StatusFinish}, v4.StatusFinish},
	} {
		if got := lastExit(&v4.TaskGroup{Status: tt.st}); got != tt.want {
			t.Errorf("lastExit(%+v) = %q, want %q", tt.st, got, tt.want)
		}
	}
}

// An instance Lost under OnFailure is kept while its node may come back, then replaced
// on another node once hostRetainTime (the grace) has passed: not pinned to the lost node
// for another hostRetainTime.
func TestLostOnFailureReplacedAfterTheGrace(t *testing.T) {
	e := newEnv(t, "node-a")
	e.apply("keep", 1, `{"policy":"OnFailure","hostRetainTime":2}`)
	e.eventually("placed", func() bool { return len(e.taskGroups("keep")) == 1 })
	first := e.taskGroups("keep")[0]
	e.report(first, v4.StatusRunning, time.Now(), time.Time{})
	// node-a is lost with its instance; node-b can take the replacement.
	n, err := testStore.Get(context.Background(), v4.KindNode, "", "node-a")
	if err != nil {
		t.Fatal(err)
	}
	n.(*v4.Node).Status.Phase = v4.NodeLost
	if err := testStore.Update(context.Background(), n, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	e.node("node-b")
	lostAt := time.Now()
	e.report(first, v4.StatusLost, first.Status.StartedAt, time.Time{})
	e.eventually("replaced on node-b", func() bool {
		tgs := e.taskGroups("keep")
		return len(tgs) == 1 && tgs[0].Spec.Node == "node-b"
	})
	if waited := time.Since(lostAt); waited < 2*time.Second {
		t.Fatalf("replaced %s after the loss, before the 2 s grace", waited)
	}
}
