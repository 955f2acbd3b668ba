package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// newJobEnv runs the job controller with retries a few milliseconds apart, and the
// application controller beside it, as a leader does: every job test also shows that
// the latter leaves a job's runs alone (it would restart a failed one).
func newJobEnv(t *testing.T, nodes ...string) *env {
	t.Helper()
	return startEnv(t, func(e *env) runner {
		c := NewJobController(testStore, e.feed, e.opts())
		c.retryBase = 10 * time.Millisecond
		return both{c, NewAppController(testStore, e.feed, e.opts())}
	}, nodes...)
}

// both runs two controllers until ctx ends.
type both [2]runner

func (b both) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, r := range b {
		wg.Go(func() { _ = r.Run(ctx) })
	}
	wg.Wait()
	return nil
}

// applyJob creates or updates job "batch" in ctl with the given spec keys (JSON, after
// the template).
func (e *env) applyJob(spec string) {
	e.t.Helper()
	doc := fmt.Sprintf(`{"apiVersion":"v4","kind":"job","metadata":{"name":"batch","namespace":"ctl"},
		"spec":{"template":{"spec":{"processes":[{"procName":"work","startCmd":"./work","resources":{"limits":{"cpu":"0.5","memory":"64"}}}]}}%s}}`, spec)
	docs, err := v4.Parse([]byte(doc))
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := testStore.Apply(context.Background(), docs); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) job() *v4.Job {
	e.t.Helper()
	j, err := store.Typed[*v4.Job](testStore, v4.KindJob).Get(context.Background(), "ctl", "batch")
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

// runs returns the job's task groups wanted running and not ended (nor lost), by index
// order.
func (e *env) runs() []*v4.TaskGroup {
	out := e.listTaskGroups("ctl", func(tg *v4.TaskGroup) bool {
		return tg.Spec.Owner.Kind == v4.KindJob && tg.Spec.Desired != v4.DesiredStopped && activeRun(tg)
	})
	slices.SortFunc(out, func(a, b *v4.TaskGroup) int { return a.Spec.Index - b.Spec.Index })
	return out
}

// waitRuns waits until n runs are active and returns them.
func (e *env) waitRuns(n int) []*v4.TaskGroup {
	e.t.Helper()
	var runs []*v4.TaskGroup
	e.eventually(fmt.Sprintf("%d active runs", n), func() bool { runs = e.runs(); return len(runs) == n })
	return runs
}

// exit reports a run ended as its agent would: Finish with code 0, else Failed.
func (e *env) exit(tg *v4.TaskGroup, code int) {
	e.t.Helper()
	phase := v4.StatusFinish
	if code != 0 {
		phase = v4.StatusFailed
	}
	now := time.Now().UTC()
	e.setStatus(tg, v4.TaskGroupStatus{Phase: phase, Updated: now, StartedAt: now.Add(-time.Second), FinishedAt: now,
		Tasks: []v4.TaskStatus{{Name: "work", Status: phase, Message: fmt.Sprintf("exited %d", code), Info: v4.ContainerInfo{ExitCode: code}}}})
}

func (e *env) waitJob(what string, ok func(v4.JobStatus) bool) v4.JobStatus {
	e.t.Helper()
	var st v4.JobStatus
	e.eventually(what, func() bool { st = e.job().Status; return ok(st) })
	return st
}

// Runs start up to parallelism; each success frees a slot for the next index, and the
// job completes when completions succeeded.
func TestJobCompletionsAndParallelism(t *testing.T) {
	e := newJobEnv(t, "n1")
	e.applyJob(`,"completions":3,"parallelism":2`)
	runs := e.waitRuns(2)
	if runs[0].Spec.JobIndex != nil || runs[0].Spec.Template.Spec.Processes[0].ProcName != "work" {
		t.Errorf("a NonIndexed run has a job index or not the template: %+v", runs[0].Spec)
	}
	st := e.waitJob("2 active, Running", func(s v4.JobStatus) bool { return s.Active == 2 && s.Phase == v4.JobRunning })
	if st.StartTime.IsZero() {
		t.Error("no start time")
	}
	e.exit(runs[0], 0)
	runs = e.waitRuns(2) // the third index started
	e.exit(runs[0], 0)
	e.exit(runs[1], 0)
	st = e.waitJob("Complete", func(s v4.JobStatus) bool { return s.Phase == v4.JobComplete })
	if st.Succeeded != 3 || st.Active != 0 || st.Failed != 0 || st.CompletionTime.IsZero() || st.Condition(v4.JobComplete) == nil {
		t.Errorf("status %+v", st)
	}
	if len(st.Finished) != 3 || st.Finished[0].Result != runSucceeded || st.Finished[0].Node != "n1" {
		t.Errorf("records %+v", st.Finished)
	}
	if n := len(e.listTaskGroups("ctl", nil)); n != 3 {
		t.Errorf("the finished runs are kept until the job goes: %d task groups", n)
	}
}

// An Indexed job gives each run its index; completedIndexes lists those that succeeded.
func TestJobIndexed(t *testing.T) {
	e := newJobEnv(t, "n1")
	e.applyJob(`,"completions":4,"parallelism":4,"completionMode":"Indexed"`)
	runs := e.waitRuns(4)
	for i, tg := range runs {
		if tg.Spec.JobIndex == nil || *tg.Spec.JobIndex != i || tg.Spec.Index != i {
			t.Fatalf("run %d: index %d, job index %v", i, tg.Spec.Index, tg.Spec.JobIndex)
		}
	}
	e.exit(runs[1], 0)
	e.exit(runs[2], 0)
	st := e.waitJob("indexes 1-2 done", func(s v4.JobStatus) bool { return s.CompletedIndexes == "1-2" })
	if st.Succeeded != 2 || st.Active != 2 {
		t.Errorf("status %+v", st)
	}
}

// A failed run is retried as a new task group of the same index, one attempt later,
// until the failures pass backoffLimit.
func TestJobRetriesUntilBackoffLimit(t *testing.T) {
	e := newJobEnv(t, "n1")
	e.applyJob(`,"completionMode":"Indexed","backoffLimit":1`)
	first := e.waitRuns(1)[0]
	e.exit(first, 1)
	var second *v4.TaskGroup
	e.eventually("a retry", func() bool {
		runs := e.runs()
		if len(runs) == 1 && runs[0].Metadata.Name != first.Metadata.Name {
			second = runs[0]
		}
		return second != nil
	})
	if second.Spec.ReschedTimes != 1 || *second.Spec.JobIndex != 0 {
		t.Errorf("the retry: attempt %d, index %v", second.Spec.ReschedTimes, second.Spec.JobIndex)
	}
	e.exit(second, 2)
	st := e.waitJob("Failed", func(s v4.JobStatus) bool { return s.Phase == v4.JobFailed })
	c := st.Condition(v4.JobFailed)
	if c.Reason != v4.ReasonBackoffLimit || st.Failed != 2 || st.Active != 0 {
		t.Errorf("status %+v", st)
	}
	if len(st.Finished) != 2 || st.Finished[1].ExitCode != 2 || st.Finished[1].Message != "exited 2" {
		t.Errorf("records %+v", st.Finished)
	}
	// A failed job starts nothing more, and its failed runs stay as they ended.
	time.Sleep(200 * time.Millisecond)
	tgs := e.listTaskGroups("ctl", nil)
	if len(tgs) != 2 {
		t.Errorf("%d task groups after the failure, want the 2 failed runs", len(tgs))
	}
	for _, tg := range tgs {
		if tg.Status.Phase != v4.StatusFailed || tg.Spec.Desired == v4.DesiredStopped {
			t.Errorf("%s: %s, desired %s", tg.Metadata.Name, tg.Status.Phase, tg.Spec.Desired)
		}
	}
}

// The failure policy: an exit code it ignores is replaced without counting; one it
// says fails the job fails it at once, and its other runs are stopped.
func TestJobFailurePolicy(t *testing.T) {
	e := newJobEnv(t, "n1")
	e.applyJob(`,"completions":2,"parallelism":2,"backoffLimit":0,"podFailurePolicy":{"rules":[
		{"action":"Ignore","onExitCodes":{"operator":"In","values":[3]}},{"action":"FailJob","onExitCodes":{"operator":"In","values":[42]}}]}`)
	runs := e.waitRuns(2)
	e.exit(runs[0], 3)
	st := e.waitJob("ignored", func(s v4.JobStatus) bool { return s.Ignored == 1 && s.Active == 2 })
	if st.Failed != 0 || st.Phase != v4.JobRunning {
		t.Errorf("after an ignored failure: %+v", st)
	}
	e.eventually("the ignored run removed", func() bool {
		_, err := testStore.Get(context.Background(), v4.KindTaskGroup, "ctl", runs[0].Metadata.Name)
		return err != nil
	})
	e.exit(runs[1], 42)
	st = e.waitJob("Failed", func(s v4.JobStatus) bool { return s.Phase == v4.JobFailed })
	if c := st.Condition(v4.JobFailed); c.Reason != v4.ReasonFailurePolicy {
		t.Errorf("condition %+v", c)
	}
	e.waitRuns(0) // the replacement of the ignored run is asked to stop
}

// Past activeDeadlineSeconds the job fails and its runs are stopped.
func TestJobDeadline(t *testing.T) {
	e := newJobEnv(t, "n1")
	e.applyJob(`,"activeDeadlineSeconds":1`)
	run := e.waitRuns(1)[0]
	e.report(run, v4.StatusRunning, time.Now(), time.Time{}) // a Staging run asked to stop is deleted at once
	st := e.waitJob("Failed", func(s v4.JobStatus) bool { return s.Phase == v4.JobFailed })
	if c := st.Condition(v4.JobFailed); c.Reason != v4.ReasonDeadline {
		t.Errorf("condition %+v", c)
	}
	e.eventually("the run asked to stop", func() bool {
		o, err := testStore.Get(context.Background(), v4.KindTaskGroup, "ctl", run.Metadata.Name)
		return err == nil && o.(*v4.TaskGroup).Spec.Desired == v4.DesiredStopped
	})
}

// Suspend stops the active runs and starts none; unset, the job goes on.
func TestJobSuspend(t *testing.T) {
	e := newJobEnv(t, "n1")
	e.applyJob(`,"suspend":true`)
	st := e.waitJob("Suspended", func(s v4.JobStatus) bool { return s.Phase == v4.JobSuspended })
	if !st.StartTime.IsZero() || len(e.runs()) != 0 {
		t.Errorf("a suspended job started: %+v", st)
	}
	e.applyJob(`,"suspend":false`)
	run := e.waitRuns(1)[0]
	e.report(run, v4.StatusRunning, time.Now(), time.Time{})
	e.waitJob("Running", func(s v4.JobStatus) bool { return s.Phase == v4.JobRunning && !s.StartTime.IsZero() })
	e.applyJob(`,"suspend":true`)
	e.waitRuns(0)
	o, err := testStore.Get(context.Background(), v4.KindTaskGroup, "ctl", run.Metadata.Name)
	if err != nil || o.(*v4.TaskGroup).Spec.Desired != v4.DesiredStopped {
		t.Errorf("the run of the suspended job: %v", err)
	}
	e.waitJob("Suspended again", func(s v4.JobStatus) bool { return s.Phase == v4.JobSuspended && s.Active == 0 })
}

// ttlSecondsAfterFinished deletes the finished job, and with it its task groups.
func TestJobTTL(t *testing.T) {
	e := newJobEnv(t, "n1")
	e.applyJob(`,"ttlSecondsAfterFinished":0`)
	e.exit(e.waitRuns(1)[0], 0)
	e.eventually("the job deleted", func() bool {
		_, err := testStore.Get(context.Background(), v4.KindJob, "ctl", "batch")
		return err != nil
	})
	e.eventually("its task groups deleted", func() bool { return len(e.listTaskGroups("ctl", nil)) == 0 })
}

// Lowering completions stops the runs of the indexes past it; the job completes with
// the indexes it keeps.
func TestJobCompletionsLowered(t *testing.T) {
	e := newJobEnv(t, "n1")
	e.applyJob(`,"completions":3,"parallelism":3,"completionMode":"Indexed"`)
	runs := e.waitRuns(3)
	e.applyJob(`,"completions":1,"parallelism":3,"completionMode":"Indexed"`)
	left := e.waitRuns(1)
	if left[0].Metadata.Name != runs[0].Metadata.Name {
		t.Fatalf("kept %s, want index 0's run", left[0].Metadata.Name)
	}
	e.exit(left[0], 0)
	st := e.waitJob("Complete", func(s v4.JobStatus) bool { return s.Phase == v4.JobComplete })
	if st.Succeeded != 1 || st.CompletedIndexes != "0" {
		t.Errorf("status %+v", st)
	}
}

// A run lost with its node is a failure: it counts, and its index runs again.
func TestJobLostRunRetried(t *testing.T) {
	e := newJobEnv(t, "n1")
	e.applyJob(`,"backoffLimit":1`)
	first := e.waitRuns(1)[0]
	e.report(first, v4.StatusLost, time.Now(), time.Time{})
	st := e.waitJob("the loss counted and retried", func(s v4.JobStatus) bool { return s.Failed == 1 && s.Active == 1 })
	if st.Phase != v4.JobRunning || len(st.Finished) != 1 || st.Finished[0].Result != runFailed {
		t.Errorf("status %+v", st)
	}
	if runs := e.runs(); len(runs) != 1 || runs[0].Metadata.Name == first.Metadata.Name || runs[0].Spec.ReschedTimes != 1 {
		t.Errorf("runs %v", runs)
	}
}

// The job queue orders jobs due at once by their resolved priority, read from the cache.
func TestJobPriorityOrdersTheQueue(t *testing.T) {
	e := newJobEnv(t, "n1")
	e.applyJob(`,"priority":500,"suspend":true`)
	c := NewJobController(testStore, e.feed, e.opts())
	key := scheduler.AppKey{Kind: v4.KindJob, Namespace: "ctl", Name: "batch"}
	e.eventually("the job's priority read from the cache", func() bool { return c.jobs.priorityOf(key) == 500 })
	if p := c.jobs.priorityOf(scheduler.AppKey{Kind: v4.KindJob, Namespace: "ctl", Name: "nosuch"}); p != 0 {
		t.Errorf("a job not cached has priority %d", p)
	}
	if c.queue.prio == nil {
		t.Error("the job queue has no priority function")
	}
}
