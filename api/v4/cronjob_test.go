package v4

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const cronJobDoc = `apiVersion: v4
kind: cronjob
metadata: {name: nightly, namespace: ml}
spec:
  schedule: "30 2 * * *"
  timeZone: Europe/Berlin
  concurrencyPolicy: forbid
  startingDeadlineSeconds: 300
  jobTemplate:
    metadata: {labels: {team: ml}}
    spec:
      template:
        spec:
          processes:
          - {procName: work, startCmd: ./train}
`

// A cronjob decodes with its schedule settings and its job template defaulted.
func TestCronJobDecodesAndDefaults(t *testing.T) {
	docs, err := Parse([]byte(cronJobDoc))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	c := docs[0].Object.(*CronJob)
	s := &c.Spec.CronSchedule
	if s.ConcurrencyPolicy != ConcurrencyForbid || *s.StartingDeadlineSeconds != 300 {
		t.Errorf("schedule %+v", s)
	}
	if ok, failed := s.HistoryLimits(); ok != 3 || failed != 1 {
		t.Errorf("history limits %d/%d, want Kubernetes' 3/1", ok, failed)
	}
	if js := c.Spec.JobTemplate.Spec.Settings(); js.Completions != 1 || js.BackoffLimit != DefaultBackoffLimit {
		t.Errorf("job template not defaulted: %+v", js)
	}
	sched, err := s.Parse()
	if err != nil || sched.Location().String() != "Europe/Berlin" || SubMinute(sched) {
		t.Errorf("Parse = %v, %v", sched, err)
	}
	for _, name := range []string{"cronjobs", "cj", "cronworkflow", "cwf"} {
		if _, err := ParseKind(name); err != nil {
			t.Errorf("ParseKind(%s): %v", name, err)
		}
	}
	if _, st, child, ok := CronParts(c); !ok || child != KindJob || st != &c.Status {
		t.Error("CronParts of a cronjob")
	}
}

// A status a user sends is dropped: the controller writes it.
func TestCronStatusIsBerths(t *testing.T) {
	doc := strings.Replace(cronJobDoc, "spec:\n  schedule", "status: {lastScheduleTime: \"2026-01-01T00:00:00Z\", active: [{name: x}]}\nspec:\n  schedule", 1)
	docs, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if st := docs[0].Object.(*CronJob).Status; !st.LastScheduleTime.IsZero() || len(st.Active) != 0 {
		t.Errorf("status kept: %+v", st)
	}
}

// Every bad setting is refused with its field named.
func TestCronValidation(t *testing.T) {
	wf := `kind: cronworkflow
apiVersion: v4
metadata: {name: cw}
spec:
  schedule: "%s"
  workflowSpec:
    entrypoint: main
    templates:
    - {name: main, container: {image: busybox}}
`
	cases := []struct {
		name, doc, field, msg string
	}{
		{"bad minute", strings.Replace(cronJobDoc, "30 2 * * *", "61 * * * *", 1), "spec.schedule", "minute: 61 is out of 0-59"},
		{"never fires", strings.Replace(cronJobDoc, "30 2 * * *", "0 0 30 2 *", 1), "spec.schedule", "never fires"},
		{"local zone", strings.Replace(cronJobDoc, "Europe/Berlin", "Local", 1), "spec.timeZone", "depends on the server"},
		{"unknown zone", strings.Replace(cronJobDoc, "Europe/Berlin", "Mars/Olympus", 1), "spec.timeZone", "unknown time zone"},
		{"zone path", strings.Replace(cronJobDoc, "Europe/Berlin", "../../../etc/passwd", 1), "spec.timeZone", "unknown time zone"},
		{"policy", strings.Replace(cronJobDoc, "forbid", "sometimes", 1), "spec.concurrencyPolicy", "must be one of"},
		{"deadline 0", strings.Replace(cronJobDoc, "300", "0", 1), "spec.startingDeadlineSeconds", "between 1 and"},
		{"history", strings.Replace(cronJobDoc, "  startingDeadlineSeconds: 300", "  successfulJobsHistoryLimit: 101", 1), "spec.successfulJobsHistoryLimit", "between 0 and 100"},
		{"failed history", strings.Replace(cronJobDoc, "  startingDeadlineSeconds: 300", "  failedJobsHistoryLimit: -1", 1), "spec.failedJobsHistoryLimit", "between 0 and 100"},
		{"long name", strings.Replace(cronJobDoc, "name: nightly", "name: "+strings.Repeat("n", 53), 1), "metadata.name", "at most 52"},
		{"job template", strings.Replace(cronJobDoc, "    spec:\n      template", "    spec:\n      completions: 0\n      template", 1), "spec.jobTemplate.spec.completions", "between 1 and"},
		{"job pod", strings.Replace(cronJobDoc, "procName: work", "procName: ''", 1), "spec.jobTemplate.spec.template.spec.processes[0]", ""},
		{"template labels", strings.Replace(cronJobDoc, "team: ml", "'': x", 1), "spec.jobTemplate.metadata.labels", ""},
		{"workflow spec", strings.Replace(fmtDoc(wf, "@hourly"), "entrypoint: main", "entrypoint: nope", 1), "spec.workflowSpec.entrypoint", "unknown template"},
		{"workflow schedule", fmtDoc(wf, "@every 1.5s"), "spec.schedule", "not a whole number of seconds"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			var fe FieldErrors
			if !errors.As(err, &fe) {
				t.Fatalf("want field errors, got %v", err)
			}
			for _, e := range fe {
				if strings.HasPrefix(e.Field, tc.field) && strings.Contains(e.Message, tc.msg) {
					return
				}
			}
			t.Errorf("no error at %s containing %q in %v", tc.field, tc.msg, fe)
		})
	}
}

func fmtDoc(doc, schedule string) string { return strings.Replace(doc, "%s", schedule, 1) }

// Sub-minute schedules parse in api/v4 (the server decides whether to admit them) and
// are reported as such.
func TestCronSubMinute(t *testing.T) {
	s := CronSchedule{Schedule: "@every 2s"}
	sched, err := s.Parse()
	if err != nil || !SubMinute(sched) || sched.Every() != 2*time.Second {
		t.Fatalf("Parse(@every 2s) = %v, %v", sched, err)
	}
	s.Schedule = "@every 90s"
	if sched, err := s.Parse(); err != nil || SubMinute(sched) {
		t.Errorf("@every 90s: %v, %v", sched, err)
	}
}
