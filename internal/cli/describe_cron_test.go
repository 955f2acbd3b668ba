package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// `berth get cronjobs` shows Kubernetes' columns; describe shows the schedule, the
// status with the active runs, and the job template.
func TestCronTableAndDescribe(t *testing.T) {
	docs, err := v4.Parse([]byte(`{"apiVersion":"v4","kind":"cronjob","metadata":{"name":"nightly","namespace":"ml"},
		"spec":{"schedule":"30 2 * * *","timeZone":"Europe/Berlin","concurrencyPolicy":"Forbid","startingDeadlineSeconds":120,
		"jobTemplate":{"spec":{"completions":2,"template":{"spec":{"processes":[{"procName":"work","startCmd":"./work"}]}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := docs[0].Object.(*v4.CronJob)
	last := time.Date(2026, 1, 2, 1, 30, 0, 0, time.UTC)
	c.Status = v4.CronStatus{LastScheduleTime: last, Active: []v4.CronRun{{Name: "nightly-29457690", ScheduledTime: last}, {Name: "nightly-mabc"}}}
	now := last.Add(90 * time.Second)
	if got, want := strings.Join(cronColumns(now).values(c), " "), "30 2 * * * Europe/Berlin false 2 90s"; got != want {
		t.Errorf("columns %q, want %q", got, want)
	}
	var b bytes.Buffer
	d := &describer{w: &b, now: now}
	d.object(c)
	for _, want := range []string{"30 2 * * * (Europe/Berlin)", "Forbid", "Starting Deadline:", "120s", "3 succeeded, 1 failed jobs kept",
		"nightly-29457690 scheduled for 2026-01-02T01:30:00Z", "nightly-mabc (triggered by hand)", "2 completions, parallelism 1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("describe lacks %q:\n%s", want, b.String())
		}
	}
}
