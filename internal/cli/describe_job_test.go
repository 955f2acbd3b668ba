package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

func testJob(t *testing.T) *v4.Job {
	t.Helper()
	docs, err := v4.Parse([]byte(`{"apiVersion":"v4","kind":"job","metadata":{"name":"train","namespace":"ml"},
		"spec":{"completions":20,"parallelism":5,"completionMode":"Indexed","backoffLimit":2,"ttlSecondsAfterFinished":60,
		"podFailurePolicy":{"rules":[{"action":"FailJob","onExitCodes":{"operator":"In","values":[42]}}]},
		"template":{"spec":{"processes":[{"procName":"work","startCmd":"./work"}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	j := docs[0].Object.(*v4.Job)
	start := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	j.Status = v4.JobStatus{Phase: v4.JobRunning, Active: 5, Succeeded: 3, Failed: 1, CompletedIndexes: "0-2", StartTime: start,
		Finished: []v4.JobRunRecord{{TaskGroup: "3.train.ml.c.1", Index: 3, Node: "n1", Result: "Failed", ExitCode: 1,
			StartedAt: start, FinishedAt: start.Add(2 * time.Second), Message: "exited 1"}}}
	return j
}

// `berth get jobs` shows kubectl's columns; describe shows the counts, the policy and
// the records of the runs that ended.
func TestJobTableAndDescribe(t *testing.T) {
	j := testJob(t)
	now := j.Status.StartTime.Add(90 * time.Second)
	got := strings.Join(jobColumns(now).values(j), " ")
	if want := "Running 3/20 5 1 90s work"; got != want {
		t.Errorf("columns %q, want %q", got, want)
	}
	var b bytes.Buffer
	d := &describer{w: &b, now: now}
	d.object(j)
	for _, want := range []string{"Completions:      3/20 succeeded (Indexed)", "Completed Indexes: 0-2",
		"5 active, 1 failed (backoffLimit 2)", "FailJob when any task's exit code In [42]", "deleted 60s after it finished",
		"index 3 attempt 0 3.train.ml.c.1 on n1: Failed, exit code 1, 2s: exited 1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("describe lacks %q:\n%s", want, b.String())
		}
	}
}
