package controller

import (
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
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
		{"onfailure lost", pol(v4.RestartOnFailure), tg(v4.StatusLost, 0, time.Second), false, 0, 0, "does not restart Lost"},
		{"onfailure finish", pol(v4.RestartOnFailure), tg(v4.StatusFinish, 0, time.Second), false, 0, 0, "does not restart Finish"},
		{"always lost", pol(v4.RestartAlways), tg(v4.StatusLost, 0, time.Second), true, 5 * time.Second, 1, ""},
		{"always finish", pol(v4.RestartAlways), tg(v4.StatusFinish, 1, time.Second), true, 15 * time.Second, 2, ""},
		{"always killed", pol(v4.RestartAlways), tg(v4.StatusKilled, 0, time.Second), false, 0, 0, "does not restart Killed"},
		{"backoff grows", pol(v4.RestartOnFailure), tg(v4.StatusFailed, 2, time.Second), true, 25 * time.Second, 3, ""},
		{"maxtimes", pol(v4.RestartOnFailure), tg(v4.StatusFailed, 3, time.Second), false, 0, 0, "maxtimes 3 reached"},
		{"reset after 30 min", pol(v4.RestartOnFailure), tg(v4.StatusFailed, 3, 31*time.Minute), true, 5 * time.Second, 1, ""},
		{"nil policy is OnFailure", nil, tg(v4.StatusFailed, 7, time.Second), true, 0, 8, ""},
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
