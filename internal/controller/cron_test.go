package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
)

// cronEnv drives cron controllers by hand: each pass is a reconcile at a time the test
// chooses (a fake clock), against the real store and caches.
type cronEnv struct {
	*env
	created time.Time // the cronjob's creationTimestamp: the clock starts there
}

func newCronEnv(t *testing.T) *cronEnv {
	t.Helper()
	return &cronEnv{env: newTestEnv(t)}
}

// controller builds a controller (a leader) whose caches hold the store's state.
func (e *cronEnv) controller() *CronController {
	e.t.Helper()
	c := NewCronController(testStore, e.opts())
	var caches []*cache.Cache
	for k, child := range cronKinds {
		caches = append(caches, c.crons[k].cache, c.runs[child].cache)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := cache.WaitSynced(ctx, caches...); err != nil {
		e.t.Fatal(err)
	}
	return c
}

// apply creates cronjob "nightly" in ctl with the given schedule settings (JSON keys
// after the schedule).
func (e *cronEnv) apply(schedule, extra string) {
	e.t.Helper()
	doc := fmt.Sprintf(`{"apiVersion":"v4","kind":"cronjob","metadata":{"name":"nightly","namespace":"ctl"},
		"spec":{"schedule":%q%s,"jobTemplate":{"spec":{"template":{"spec":{"processes":[{"procName":"work","startCmd":"./work"}]}}}}}}`, schedule, extra)
	docs, err := v4.Parse([]byte(doc))
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := testStore.Apply(context.Background(), docs); err != nil {
		e.t.Fatal(err)
	}
	e.created = e.cronJob().Metadata.CreationTimestamp
}

func (e *cronEnv) cronJob() *v4.CronJob {
	e.t.Helper()
	c, err := store.Typed[*v4.CronJob](testStore, v4.KindCronJob).Get(context.Background(), "ctl", "nightly")
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

var nightlyKey = scheduler.AppKey{Kind: v4.KindCronJob, Namespace: "ctl", Name: "nightly"}

// pass reconciles the cronjob once at now, after c's caches saw every write of the test.
func (e *cronEnv) pass(c *CronController, now time.Time) time.Duration {
	e.t.Helper()
	rev, err := testStore.Revision(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, v := range c.crons {
		v.wroteAt(rev)
	}
	for _, v := range c.runs {
		v.wroteAt(rev)
	}
	c.now = func() time.Time { return now }
	d, err := c.reconcile(context.Background(), nightlyKey)
	if err != nil {
		e.t.Fatalf("reconcile at %s: %v", now, err)
	}
	return d
}

// jobs are the cronjob's runs in the store, by name.
func (e *cronEnv) jobs() []*v4.Job {
	e.t.Helper()
	all, _, err := store.Typed[*v4.Job](testStore, v4.KindJob).List(context.Background(), "ctl")
	if err != nil {
		e.t.Fatal(err)
	}
	var out []*v4.Job
	for _, j := range all {
		if j.Metadata.Labels[v4.CronJobLabel] == "nightly" {
			out = append(out, j)
		}
	}
	return out
}

func jobNames(js []*v4.Job) []string {
	var out []string
	for _, j := range js {
		out = append(out, j.Metadata.Name)
	}
	return out
}

// finish marks a run Complete (ok) or Failed at t, as the job controller would.
func (e *cronEnv) finish(j *v4.Job, ok bool, t time.Time) {
	e.t.Helper()
	typ := v4.JobFailed
	if ok {
		typ = v4.JobComplete
	}
	j.Status.Phase = typ
	j.Status.Conditions = []v4.JobCondition{{Type: typ, Status: "True", Time: t}}
	j.Status.CompletionTime = t
	if err := testStore.Update(context.Background(), j, store.Raw{}); err != nil {
		e.t.Fatal(err)
	}
}

// minute returns the first whole minute of the clock after the cronjob's creation,
// plus k minutes.
func (e *cronEnv) minute(k int) time.Time {
	return e.created.Truncate(time.Minute).Add(time.Duration(k+1) * time.Minute)
}

// A due time starts one run, named after the scheduled minute, with lastScheduleTime
// moved in the same write; the same time seen again starts nothing more.
func TestCronStartsOnce(t *testing.T) {
	e := newCronEnv(t)
	e.apply("* * * * *", "")
	c := e.controller()
	if d := e.pass(c, e.created); d <= 0 || d > time.Minute {
		t.Errorf("before the first minute: wake in %s", d)
	}
	if js := e.jobs(); len(js) != 0 {
		t.Fatalf("runs before the schedule fired: %v", jobNames(js))
	}
	due := e.minute(0)
	e.pass(c, due.Add(5*time.Second))
	js := e.jobs()
	want := fmt.Sprintf("nightly-%d", due.Unix()/60)
	if len(js) != 1 || js[0].Metadata.Name != want {
		t.Fatalf("runs %v, want [%s]; status %+v", jobNames(js), want, e.cronJob().Status)
	}
	if js[0].Metadata.Annotations[v4.ScheduledTimeAnnotation] != due.UTC().Format(time.RFC3339) ||
		js[0].Metadata.Annotations[v4.ControlledByAnnotation] != "cronjob/nightly" {
		t.Errorf("run annotations %v", js[0].Metadata.Annotations)
	}
	st := e.cronJob().Status
	if !st.LastScheduleTime.Equal(due) || len(st.Active) != 1 || st.Active[0].Name != want {
		t.Errorf("status %+v", st)
	}
	e.pass(c, due.Add(10*time.Second))
	if js := e.jobs(); len(js) != 1 {
		t.Errorf("the same time started again: %v", jobNames(js))
	}
}

// After an outage of an hour, one run starts (for the latest missed time), not sixty;
// with a startingDeadlineSeconds shorter than the time since the last one, none.
func TestCronMissedRunsStartOnce(t *testing.T) {
	e := newCronEnv(t)
	e.apply("* * * * *", "")
	c := e.controller()
	now := e.minute(59).Add(30 * time.Second)
	e.pass(c, now)
	js := e.jobs()
	if len(js) != 1 || js[0].Metadata.Name != fmt.Sprintf("nightly-%d", e.minute(59).Unix()/60) {
		t.Fatalf("runs after an hour's outage: %v", jobNames(js))
	}
	e.pass(c, now.Add(time.Second))
	if len(e.jobs()) != 1 {
		t.Fatal("a second pass started a missed run again")
	}

	e2 := newCronEnv(t)
	e2.apply("* * * * *", `,"startingDeadlineSeconds":10`)
	c2 := e2.controller()
	e2.pass(c2, e2.minute(3).Add(20*time.Second)) // 20 s late: past the deadline
	if js := e2.jobs(); len(js) != 0 {
		t.Fatalf("a run past startingDeadlineSeconds started: %v", jobNames(js))
	}
	e2.pass(c2, e2.minute(4).Add(5*time.Second))
	if js := e2.jobs(); len(js) != 1 {
		t.Fatalf("the next time within the deadline: runs %v", jobNames(js))
	}
}

// A new leader with the same stored state starts nothing twice: neither after the old
// one's write, nor when the run exists and the status was not moved (a run a user or an
// older leader made), nor when two leaders pass at once.
func TestCronFailoverStartsNothingTwice(t *testing.T) {
	e := newCronEnv(t)
	e.apply("* * * * *", "")
	old := e.controller()
	due := e.minute(0)
	e.pass(old, due.Add(time.Second))
	successor := e.controller()
	e.pass(successor, due.Add(2*time.Second))
	if js := e.jobs(); len(js) != 1 {
		t.Fatalf("after a failover: runs %v", jobNames(js))
	}

	// The next run exists already but lastScheduleTime was not moved.
	next := e.minute(1)
	run, err := NewCronRun(e.cronJob(), CronRunName("nightly", next, mustSchedule(t, "* * * * *")), next)
	if err != nil {
		t.Fatal(err)
	}
	if err := testStore.Create(context.Background(), run, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	e.pass(successor, next.Add(time.Second))
	if js := e.jobs(); len(js) != 2 {
		t.Fatalf("a run that existed was started again: %v", jobNames(js))
	}
	if st := e.cronJob().Status; !st.LastScheduleTime.Equal(next) {
		t.Errorf("lastScheduleTime %s, want it moved to %s", st.LastScheduleTime, next)
	}

	// Two leaders at once (a partition's old leader still running): one run.
	third := e.minute(2).Add(time.Second)
	a, b := e.controller(), e.controller()
	for _, c := range []*CronController{a, b} {
		c.now = func() time.Time { return third }
	}
	var wg sync.WaitGroup
	for _, c := range []*CronController{a, b} {
		wg.Go(func() {
			// A conflict is retried, as the worker does, with a pause: the loser's cache
			// must see the winner's write first, which takes longer on a loaded machine
			// than ten immediate retries.
			for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
				if _, err := c.reconcile(context.Background(), nightlyKey); err == nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if js := e.jobs(); len(js) != 3 {
		t.Fatalf("two leaders at once: runs %v", jobNames(js))
	}
}

// Forbid waits while a run is active and starts the waiting time once it ends;
// Replace deletes the active run first; Allow runs them side by side.
func TestCronConcurrencyPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy       string
		second       int // runs after the second due time
		firstDeleted bool
	}{
		{v4.ConcurrencyForbid, 1, false},
		{v4.ConcurrencyReplace, 1, true},
		{v4.ConcurrencyAllow, 2, false},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			e := newCronEnv(t)
			e.apply("* * * * *", fmt.Sprintf(`,"concurrencyPolicy":%q`, tc.policy))
			c := e.controller()
			e.pass(c, e.minute(0).Add(time.Second))
			first := e.jobs()
			if len(first) != 1 {
				t.Fatalf("first run: %v", jobNames(first))
			}
			e.pass(c, e.minute(1).Add(time.Second))
			js := e.jobs()
			if len(js) != tc.second {
				t.Fatalf("runs after the second time: %v, want %d", jobNames(js), tc.second)
			}
			if gone := !slices.Contains(jobNames(js), first[0].Metadata.Name); gone != tc.firstDeleted {
				t.Fatalf("first run deleted: %v, want %v (runs %v)", gone, tc.firstDeleted, jobNames(js))
			}
			if tc.policy != v4.ConcurrencyForbid {
				return
			}
			if st := e.cronJob().Status; !strings.Contains(st.Message, "Forbid") || !st.LastScheduleTime.Equal(e.minute(0)) {
				t.Errorf("status while forbidden %+v", st)
			}
			e.finish(js[0], true, e.minute(1).Add(20*time.Second))
			e.pass(c, e.minute(1).Add(30*time.Second))
			if js := e.jobs(); len(js) != 2 {
				t.Fatalf("the waiting time did not start once the run ended: %v", jobNames(js))
			}
			if st := e.cronJob().Status; !st.LastSuccessfulTime.Equal(e.minute(1).Add(20*time.Second)) || len(st.Active) != 1 {
				t.Errorf("status after the run ended %+v", st)
			}
		})
	}
}

// Allow runs side by side up to the bound of active runs; past it a due time waits.
func TestCronActiveBound(t *testing.T) {
	e := newCronEnv(t)
	e.apply("* * * * *", "")
	c := e.controller()
	c.maxActive = 2
	for k := range 3 {
		e.pass(c, e.minute(k).Add(time.Second))
	}
	if js := e.jobs(); len(js) != 2 {
		t.Fatalf("runs %v, want 2 (the bound)", jobNames(js))
	}
	if st := e.cronJob().Status; !strings.Contains(st.Message, "2 runs are active") {
		t.Errorf("status at the bound %+v", st)
	}
}

// Finished runs beyond the history limits are deleted, the oldest first.
func TestCronHistoryPruned(t *testing.T) {
	e := newCronEnv(t)
	e.apply("* * * * *", `,"successfulJobsHistoryLimit":2,"failedJobsHistoryLimit":1`)
	c := e.controller()
	for k := range 6 {
		e.pass(c, e.minute(k).Add(time.Second))
		js := e.jobs()
		slices.SortFunc(js, func(a, b *v4.Job) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
		last := js[len(js)-1]
		e.finish(last, k%2 == 0, e.minute(k).Add(30*time.Second)) // ok, failed, ok, ...
	}
	e.pass(c, e.minute(5).Add(40*time.Second))
	names := jobNames(e.jobs())
	slices.Sort(names)
	want := []string{runName(e, 2), runName(e, 4), runName(e, 5)} // ok 2 and 4, failed 5
	if !slices.Equal(names, want) {
		t.Errorf("kept %v, want %v", names, want)
	}
}

func runName(e *cronEnv, k int) string { return fmt.Sprintf("nightly-%d", e.minute(k).Unix()/60) }

// A suspended cronjob starts nothing; resumed, it starts the latest missed time once.
func TestCronSuspend(t *testing.T) {
	e := newCronEnv(t)
	e.apply("* * * * *", `,"suspend":true`)
	c := e.controller()
	if d := e.pass(c, e.minute(3).Add(time.Second)); d != 0 {
		t.Errorf("a suspended cronjob wakes in %s", d)
	}
	if js := e.jobs(); len(js) != 0 {
		t.Fatalf("suspended, runs %v", jobNames(js))
	}
	e.apply("* * * * *", "")
	e.pass(c, e.minute(3).Add(2*time.Second))
	if js := e.jobs(); len(js) != 1 || js[0].Metadata.Name != runName(e, 3) {
		t.Fatalf("resumed, runs %v", jobNames(js))
	}
}
