package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/api/cron"
	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// A trigger creates a run at once, outside the schedule, which the next pass lists as
// active; deleting the cronjob deletes its runs.
func TestCronTriggerAndDelete(t *testing.T) {
	e := newCronEnv(t)
	e.apply("@daily", "")
	c := e.controller()
	run, err := TriggerCron(context.Background(), testStore, v4.KindCronJob, "ctl", "nightly", e.created, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(run.GetMeta().Name, "nightly-m") {
		t.Errorf("manual run named %s", run.GetMeta().Name)
	}
	e.pass(c, e.created.Add(time.Second))
	if st := e.cronJob().Status; len(st.Active) != 1 || st.Active[0].Name != run.GetMeta().Name || !st.LastScheduleTime.IsZero() {
		t.Errorf("status after a trigger %+v", st)
	}
	if _, err := TriggerCron(context.Background(), testStore, v4.KindJob, "ctl", "nightly", e.created, nil); err == nil {
		t.Error("a job was triggered")
	}
	if _, err := testStore.Delete(context.Background(), v4.KindCronJob, "ctl", "nightly", ""); err != nil {
		t.Fatal(err)
	}
	e.pass(c, e.created.Add(2*time.Second))
	if js := e.jobs(); len(js) != 0 {
		t.Errorf("runs left after the cronjob was deleted: %v", jobNames(js))
	}
}

// A cronworkflow creates workflow objects, named and labelled the same way.
func TestCronWorkflowCreatesWorkflows(t *testing.T) {
	e := newCronEnv(t)
	doc := `{"apiVersion":"v4","kind":"cronworkflow","metadata":{"name":"nightly","namespace":"ctl"},
		"spec":{"schedule":"@every 2s","concurrencyPolicy":"Allow","workflowMetadata":{"labels":{"team":"ml"}},
		"workflowSpec":{"entrypoint":"main","templates":[{"name":"main","container":{"image":"busybox"}}]}}}`
	docs, err := v4.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testStore.Apply(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	cw, err := store.Typed[*v4.CronWorkflow](testStore, v4.KindCronWorkflow).Get(context.Background(), "ctl", "nightly")
	if err != nil {
		t.Fatal(err)
	}
	c := e.controller()
	c.now = func() time.Time { return cw.Metadata.CreationTimestamp.Add(5 * time.Second) }
	key := scheduler.AppKey{Kind: v4.KindCronWorkflow, Namespace: "ctl", Name: "nightly"}
	if d, err := c.reconcile(context.Background(), key); err != nil || d <= 0 || d > 2*time.Second {
		t.Fatalf("reconcile: wake in %s, %v", d, err)
	}
	wfs, _, err := store.Typed[*v4.Workflow](testStore, v4.KindWorkflow).List(context.Background(), "ctl")
	if err != nil {
		t.Fatal(err)
	}
	due := cw.Metadata.CreationTimestamp.Add(4 * time.Second)
	if len(wfs) != 1 || wfs[0].Metadata.Name != fmt.Sprintf("nightly-%d", due.Unix()) ||
		wfs[0].Metadata.Labels[v4.CronWorkflowLabel] != "nightly" || wfs[0].Metadata.Labels["team"] != "ml" {
		t.Fatalf("workflows %+v", wfs)
	}
}

// The next wake follows the schedule in its zone: across New York's spring-forward a
// 02:30 schedule fires at 03:00 EDT (api/cron's rule), and an `@every` schedule counts
// from the last scheduled time, not from the clock.
func TestCronNextWake(t *testing.T) {
	ny := mustSchedule(t, "30 2 * * *", "America/New_York")
	loc := ny.Location()
	now := time.Date(2026, 3, 8, 1, 0, 0, 0, loc)
	if d := untilNext(ny, now.Add(-time.Hour), now); !now.Add(d).Equal(time.Date(2026, 3, 8, 3, 0, 0, 0, loc)) {
		t.Errorf("spring-forward: fires at %s", now.Add(d))
	}
	every := mustSchedule(t, "@every 2s")
	last := time.Unix(1000, 0)
	if d := untilNext(every, last, time.Unix(1005, 500_000_000)); d != 500*time.Millisecond {
		t.Errorf("@every 2s from 1000 at 1005.5: wake in %s, want 500ms (at 1006)", d)
	}
}

func mustSchedule(t *testing.T, spec string, zone ...string) *cron.Schedule {
	t.Helper()
	s := v4.CronSchedule{Schedule: spec}
	if len(zone) > 0 {
		s.TimeZone = zone[0]
	}
	sched, err := s.Parse()
	if err != nil {
		t.Fatal(err)
	}
	return sched
}
