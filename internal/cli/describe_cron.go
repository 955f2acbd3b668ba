package cli

import (
	"fmt"
	"strconv"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// cronColumns are the columns of cronjobs and cronworkflows, Kubernetes' own.
func cronColumns(now time.Time) kindColumns {
	return kindColumns{[]string{"SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE"}, func(o v4.Object) []string {
		s, st, _, ok := v4.CronParts(o)
		if !ok {
			return []string{"", "", "", "", ""}
		}
		last := none
		if !st.LastScheduleTime.IsZero() {
			last = age(st.LastScheduleTime, now)
		}
		return []string{s.Schedule, orNone(s.TimeZone), strconv.FormatBool(s.Suspend), strconv.Itoa(len(st.Active)), last}
	}}
}

// cron describes a cronjob or a cronworkflow: its schedule, its status and its runs'
// template.
func (d *describer) cron(o v4.Object) {
	s, st, child, _ := v4.CronParts(o)
	zone := s.TimeZone
	if zone == "" {
		zone = "UTC"
	}
	d.kv("Schedule", "%s (%s)", s.Schedule, zone)
	d.kv("Concurrency Policy", "%s", orNone(s.ConcurrencyPolicy))
	if dl := s.StartingDeadlineSeconds; dl != nil {
		d.kv("Starting Deadline", "%ds", *dl)
	}
	ok, failed := s.HistoryLimits()
	d.kv("History", "%d succeeded, %d failed %s kept", ok, failed, child.Plural())
	d.kv("Suspend", "%t", s.Suspend)
	d.kv("Last Schedule", "%s", d.cronTime(st.LastScheduleTime))
	d.kv("Last Successful", "%s", d.cronTime(st.LastSuccessfulTime))
	if st.Message != "" {
		d.kv("Message", "%s", st.Message)
	}
	d.section(fmt.Sprintf("Active %s", child.Plural()), func() {
		if len(st.Active) == 0 {
			d.line(none)
		}
		for _, r := range st.Active {
			if r.ScheduledTime.IsZero() {
				d.line(r.Name + " (triggered by hand)")
				continue
			}
			d.line(fmt.Sprintf("%s scheduled for %s", r.Name, r.ScheduledTime.Format(time.RFC3339)))
		}
	})
	switch c := o.(type) {
	case *v4.CronJob:
		t := &c.Spec.JobTemplate
		set := t.Spec.Settings()
		d.kv("Job", "%d completions, parallelism %d, backoffLimit %d", set.Completions, set.Parallelism, set.BackoffLimit)
		d.policies(nil, t.KillPolicy, t.Constraint)
		d.template(&t.Spec.Template)
	case *v4.CronWorkflow:
		d.kv("Workflow", "entrypoint %s, %d templates", c.Spec.WorkflowSpec.Entrypoint, len(c.Spec.WorkflowSpec.Templates))
	}
}

// cronTime is a time with its age, or none.
func (d *describer) cronTime(t time.Time) string {
	if t.IsZero() {
		return none
	}
	return fmt.Sprintf("%s (%s ago)", t.Format(time.RFC3339), age(t, d.now))
}
