package v4

import (
	"strings"
	"time"

	"github.com/berthhq/berth/api/cron"
)

// defaultCron fills the schedule settings, so the stored object says what applies.
func defaultCron(s *CronSchedule) {
	s.ConcurrencyPolicy = canon(s.ConcurrencyPolicy, ConcurrencyAllow, ConcurrencyForbid, ConcurrencyReplace)
	if s.ConcurrencyPolicy == "" {
		s.ConcurrencyPolicy = ConcurrencyAllow
	}
	for _, p := range []struct {
		v   **int
		def int
	}{{&s.SuccessfulJobsHistoryLimit, DefaultSuccessfulHistory}, {&s.FailedJobsHistoryLimit, DefaultFailedHistory}} {
		if *p.v == nil {
			n := p.def
			*p.v = &n
		}
	}
}

// defaultCronJob fills the schedule and the job template as a job's own defaults would.
func defaultCronJob(c *CronJob) {
	defaultCron(&c.Spec.CronSchedule)
	t := &c.Spec.JobTemplate
	j := &Job{KillPolicy: t.KillPolicy, Constraint: t.Constraint, Spec: t.Spec}
	defaultJob(j)
	t.KillPolicy, t.Constraint, t.Spec = j.KillPolicy, j.Constraint, j.Spec
}

// Parse parses the schedule in its time zone. Sub-minute `@every` schedules parse:
// whether they are admitted is the server's choice (docs/cron.md).
func (s *CronSchedule) Parse() (*cron.Schedule, error) {
	loc, err := cron.ParseTimeZone(s.TimeZone)
	if err != nil {
		return nil, err
	}
	return cron.Parse(s.Schedule, cron.Options{Location: loc, AllowSubMinute: true})
}

// SubMinute reports whether a parsed schedule fires more than once a minute.
func SubMinute(s *cron.Schedule) bool {
	return s.Every() > 0 && s.Every() < time.Minute
}

func validateCron(s *CronSchedule, name string, errs *FieldErrors) {
	if len(name) > MaxCronNameLen {
		errs.add("metadata.name", "must be at most %d characters (a run is named <name>-<unix time>), got %d", MaxCronNameLen, len(name))
	}
	if _, err := cron.ParseTimeZone(s.TimeZone); err != nil {
		errs.add("spec.timeZone", "%s", strings.TrimPrefix(err.Error(), "timeZone: "))
	} else if _, err := s.Parse(); err != nil {
		errs.add("spec.schedule", "%s", err.Error())
	}
	oneOf("spec.concurrencyPolicy", s.ConcurrencyPolicy, errs, ConcurrencyAllow, ConcurrencyForbid, ConcurrencyReplace)
	boundedCount("spec.startingDeadlineSeconds", s.StartingDeadlineSeconds, 1, MaxJobDeadline, errs)
	boundedCount("spec.successfulJobsHistoryLimit", s.SuccessfulJobsHistoryLimit, 0, MaxCronHistory, errs)
	boundedCount("spec.failedJobsHistoryLimit", s.FailedJobsHistoryLimit, 0, MaxCronHistory, errs)
}

func validateCronJob(c *CronJob, errs *FieldErrors) {
	validateCron(&c.Spec.CronSchedule, c.Metadata.Name, errs)
	t := &c.Spec.JobTemplate
	if m := t.Metadata; m != nil {
		validateLabels("spec.jobTemplate.metadata.labels", m.Labels, errs)
		validateLabels("spec.jobTemplate.metadata.annotations", m.Annotations, errs)
	}
	j := &Job{Metadata: ObjectMeta{Name: c.Metadata.Name, Namespace: c.Metadata.Namespace},
		KillPolicy: t.KillPolicy, Constraint: t.Constraint, Spec: t.Spec}
	nested(errs, func(p string) string { return "spec.jobTemplate." + p }, func(e *FieldErrors) { validateJob(j, e) })
}

func validateCronWorkflow(c *CronWorkflow, errs *FieldErrors) {
	validateCron(&c.Spec.CronSchedule, c.Metadata.Name, errs)
	if m := c.Spec.WorkflowMetadata; m != nil {
		validateLabels("spec.workflowMetadata.labels", m.Labels, errs)
		validateLabels("spec.workflowMetadata.annotations", m.Annotations, errs)
	}
	under := func(p string) string { return "spec.workflowSpec." + strings.TrimPrefix(p, "spec.") }
	nested(errs, under, func(e *FieldErrors) {
		validateWorkflowSpec(&c.Spec.WorkflowSpec, false, e)
	})
}

// nested runs a validation written for a top-level object (paths "spec.…",
// "killPolicy…") on a part of another, and renames its paths to where that part is.
func nested(errs *FieldErrors, rename func(string) string, validate func(*FieldErrors)) {
	var inner FieldErrors
	validate(&inner)
	for _, e := range inner {
		errs.add(rename(e.Field), "%s", e.Message)
	}
}
