package controller

import (
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestRestartStormWindow(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ago := func(ds ...time.Duration) []time.Time {
		var out []time.Time
		for _, d := range ds {
			out = append(out, now.Add(-d))
		}
		return out
	}
	cases := []struct {
		name    string
		before  []time.Time
		wantLen int
		storm   bool
	}{
		{"first restart", nil, 1, false},
		{"third restart", ago(20*time.Minute, 10*time.Minute), 3, false},
		{"fourth within 30 minutes", ago(29*time.Minute, 20*time.Minute, time.Minute), 4, true},
		{"fourth but the first is older", ago(31*time.Minute, 20*time.Minute, time.Minute), 3, false},
		{"storm under way is reported once", ago(4*time.Second, 3*time.Second, 2*time.Second, time.Second), 5, false},
		{"history stays bounded", ago(9*time.Second, 8*time.Second, 7*time.Second, 6*time.Second, 5*time.Second), 5, false},
		{"times in the future are dropped", ago(-time.Hour, time.Minute), 2, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg := &v4.TaskGroup{Spec: v4.TaskGroupSpec{RecentRestarts: tc.before}}
			got := recentRestarts(tg, now)
			if len(got) != tc.wantLen || !got[len(got)-1].Equal(now) {
				t.Fatalf("history %v, want %d entries ending now", got, tc.wantLen)
			}
			if s := stormStarts(got); s != tc.storm {
				t.Errorf("storm %v, want %v", s, tc.storm)
			}
		})
	}
}

// Restarts in a row (restartPolicy Always, no delay) give one RestartStorm warning naming
// the task group when the fourth restart comes, and none for the restarts after it. Each
// run reports 11 minutes of running, so the crash-loop floor (restart.go) does not slow
// the test down: storms count restarts, whatever the runs' lengths.
func TestCrashLoopRecordsOneRestartStorm(t *testing.T) {
	e := newEnv(t, "node-1")
	e.apply("web", 1, `{"policy":"Always"}`)
	for run := range 6 {
		var cur *v4.TaskGroup
		e.eventually("run "+string(rune('0'+run)), func() bool {
			tgs := e.taskGroups("web")
			if len(tgs) == 1 && tgs[0].Spec.ReschedTimes == run {
				cur = tgs[0]
				return true
			}
			return false
		})
		if len(cur.Spec.RecentRestarts) != min(run, stormRestarts+2) { // bounded: the limit + 1 kept, plus the latest
			t.Fatalf("run %d carries %d restart times", run, len(cur.Spec.RecentRestarts))
		}
		e.report(cur, v4.StatusFailed, time.Now().Add(-11*time.Minute), time.Now())
	}
	e.eventually("the sixth restart", func() bool {
		tgs := e.taskGroups("web")
		return len(tgs) == 1 && tgs[0].Spec.ReschedTimes == 6
	})
	events := eventsEventually(t, "the storm event", v4.EventFilter{Namespace: "ctl", Kind: v4.KindProcess, Name: "web"},
		func(events []v4.Event) bool { return hasReason(events, "RestartStorm") })
	var storms []v4.Event
	for _, ev := range events {
		if ev.Reason == "RestartStorm" {
			storms = append(storms, ev)
		}
	}
	if len(storms) != 1 {
		t.Fatalf("want 1 RestartStorm event, got %d: %+v", len(storms), storms)
	}
	if s := storms[0]; s.Type != v4.EventWarning || s.TaskGroup == "" || s.Node != "node-1" || s.Namespace != "ctl" {
		t.Errorf("RestartStorm event %+v", s)
	}
}
