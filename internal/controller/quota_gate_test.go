package controller

import (
	"context"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/quota"
	"github.com/berthhq/berth/internal/store"
)

// setQuota gives namespace ctl a resource quota until the test ends.
func setQuota(t *testing.T, l quota.List) {
	t.Helper()
	if _, err := testStore.SetNamespaceLimits(context.Background(), "ctl", store.NamespaceLimits{Resources: l}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = testStore.SetNamespaceLimits(context.Background(), "ctl", store.NamespaceLimits{}) })
}

// A job whose parallelism is above its namespace's quota runs only what fits: the other
// runs wait with the reason in the status and a QuotaExceeded event, and start as runs
// end. The quota cannot be escaped by a high parallelism.
func TestJobRunsWaitForQuota(t *testing.T) {
	setQuota(t, quota.List{quota.CPU: 1.2, quota.Instances: 5})
	e := newJobEnv(t, "n1")
	e.applyJob(`,"completions":4,"parallelism":4`) // runs of 0.5 cpu: two fit in 1.2
	runs := e.waitRuns(2)
	e.waitJob("the reason", func(s v4.JobStatus) bool {
		return strings.Contains(s.Message, "wait for room in the namespace's quota") && strings.Contains(s.Message, "cpu quota exceeded")
	})
	e.eventually("a QuotaExceeded event", func() bool { return contains(e.reasons(v4.KindJob, "batch"), ReasonQuotaExceeded) })
	if n := len(e.runs()); n != 2 {
		t.Fatalf("%d runs active, want 2", n)
	}
	e.exit(runs[0], 0)
	runs = e.waitRuns(2) // the freed room starts the next run, no more
	e.exit(runs[0], 0)
	e.exit(runs[1], 0)
	e.exit(e.waitRuns(1)[0], 0)
	e.waitJob("Complete", func(s v4.JobStatus) bool { return s.Phase == v4.JobComplete && s.Succeeded == 4 })
}

// A workflow's fan-out runs only the steps that fit the quota: B and C, parallel in the
// DAG, run one after the other under a quota of one instance.
func TestWorkflowStepsWaitForQuota(t *testing.T) {
	setQuota(t, quota.List{quota.Instances: 1})
	e := newWfEnv(t)
	e.applyWf(wfDiamond)
	e.finish(e.waitSteps("wf.A")["wf.A"], 0, "x=hello")
	var first *v4.TaskGroup
	e.eventually("one of B and C", func() bool {
		s := e.steps()
		for _, tg := range s {
			first = tg
		}
		return len(s) == 1
	})
	e.eventually("a QuotaExceeded event", func() bool { return contains(e.reasons(v4.KindWorkflow, "wf"), ReasonQuotaExceeded) })
	e.waitWf("the reason", func(s v4.WorkflowStatus) bool { return strings.Contains(s.Message, "instances quota exceeded") })
	e.finish(first, 0)
	var second *v4.TaskGroup
	e.eventually("the other one", func() bool {
		s := e.steps()
		for _, tg := range s {
			second = tg
		}
		return len(s) == 1 && second.Metadata.Name != first.Metadata.Name
	})
	e.finish(second, 0)
	e.finish(e.waitSteps("wf.D")["wf.D"], 0)
	e.waitWf("Succeeded", func(s v4.WorkflowStatus) bool { return s.Phase == v4.WfSucceeded })
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
