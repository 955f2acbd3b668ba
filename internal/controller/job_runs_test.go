package controller

import (
	"fmt"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

func endedRun(phase string, desired string, tasks ...v4.TaskStatus) *v4.TaskGroup {
	tg := &v4.TaskGroup{}
	tg.Metadata.Name = "0.j.ns.c.1"
	tg.Spec.Desired = desired
	tg.Status.Phase, tg.Status.Tasks = phase, tasks
	return tg
}

func task(name, role string, code int) v4.TaskStatus {
	return v4.TaskStatus{Name: name, Role: role, Info: v4.ContainerInfo{ExitCode: code}}
}

// How a run ended: main tasks decide (a sidecar killed at the end does not), a stop by
// berth is no failure, and the first failure policy rule that matches decides.
func TestJobRunOutcome(t *testing.T) {
	policy := &v4.PodFailurePolicy{Rules: []v4.PodFailureRule{
		{Action: v4.FailureIgnore, OnExitCodes: &v4.ExitCodeRequirement{ContainerName: "work", Operator: v4.OperatorIn, Values: []int{75}}},
		{Action: v4.FailureFailJob, OnExitCodes: &v4.ExitCodeRequirement{Operator: v4.OperatorNotIn, Values: []int{1, 75}}},
	}}
	for _, tc := range []struct {
		name    string
		tg      *v4.TaskGroup
		result  string
		failJob bool
		code    int
	}{
		{"success", endedRun(v4.StatusFinish, "", task("work", "", 0), task("proxy", v4.RoleSidecar, 137)), runSucceeded, false, 0},
		{"no tasks reported", endedRun(v4.StatusFinish, ""), runSucceeded, false, 0},
		{"counted", endedRun(v4.StatusFailed, "", task("work", "", 1)), runFailed, false, 1},
		{"ignored", endedRun(v4.StatusFailed, "", task("work", "", 75)), runIgnored, false, 75},
		{"ignored only for its task", endedRun(v4.StatusFailed, "", task("other", "", 75), task("work", "", 0)), runFailed, false, 75},
		{"fails the job", endedRun(v4.StatusFailed, "", task("work", "", 42)), runFailed, true, 42},
		{"lost", endedRun(v4.StatusLost, ""), runFailed, false, 0},
		{"error without a code", endedRun(v4.StatusError, ""), runFailed, false, 0},
		{"stopped by berth", endedRun(v4.StatusKilled, v4.DesiredStopped, task("work", "", 137)), runStopped, false, 0},
	} {
		o := outcome(tc.tg, policy)
		if o.result != tc.result || o.failJob != tc.failJob || o.exitCode != tc.code {
			t.Errorf("%s: %+v, want %s failJob=%t code %d", tc.name, o, tc.result, tc.failJob, tc.code)
		}
	}
	if o := outcome(endedRun(v4.StatusFailed, "", task("work", "", 42)), nil); o.result != runFailed || o.failJob {
		t.Errorf("without a policy: %+v", o)
	}
}

// The records of a pass stay bounded however many runs ended, and keep the latest.
func TestJobRecordsBounded(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var recs []v4.JobRunRecord
	for i := range 1000 {
		recs = keepLatest(append(recs, v4.JobRunRecord{TaskGroup: fmt.Sprintf("%d.j", i), FinishedAt: base.Add(time.Duration(i) * time.Second)}))
		if len(recs) >= 2*v4.MaxJobRecords {
			t.Fatalf("%d records kept", len(recs))
		}
	}
	old := []v4.JobRunRecord{{TaskGroup: "gone", FinishedAt: base.Add(2000 * time.Second)}, {TaskGroup: "older", FinishedAt: base}}
	out := mergeRecords(old, recs)
	if len(out) != v4.MaxJobRecords || out[len(out)-1].TaskGroup != "gone" || out[0].TaskGroup != "951.j" {
		t.Errorf("merged %d records, first %s, last %s", len(out), out[0].TaskGroup, out[len(out)-1].TaskGroup)
	}
	for _, n := range []int{1, 2, 3, 10, 40} {
		if d := retryDelay(time.Second, n); d > jobRetryCap || d < time.Second {
			t.Errorf("retryDelay(%d) = %s", n, d)
		}
	}
	if retryDelay(time.Second, 3) != 4*time.Second || retryDelay(time.Second, 1000) != jobRetryCap {
		t.Error("retryDelay doubles up to its cap")
	}
}
