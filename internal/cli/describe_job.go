package cli

import (
	"fmt"
	"strconv"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// jobColumns are `berth get jobs`' columns, after kubectl's: how many runs succeeded
// of how many wanted, how many run, how many failed, and how long the job ran.
func jobColumns(now time.Time) kindColumns {
	return kindColumns{[]string{"STATUS", "COMPLETIONS", "ACTIVE", "FAILED", "DURATION", "TASKS"}, func(o v4.Object) []string {
		j, _ := o.(*v4.Job)
		if j == nil {
			return []string{"", "", "", "", "", ""}
		}
		st, set := j.Status, j.Spec.Settings()
		return []string{orNone(st.Phase), fmt.Sprintf("%d/%d", st.Succeeded, set.Completions), strconv.Itoa(st.Active),
			strconv.Itoa(st.Failed), jobDuration(st, now), taskSummary(&j.Spec.Template.Spec)}
	}}
}

// jobDuration is how long a job ran: from its start to its completion, or to now.
func jobDuration(st v4.JobStatus, now time.Time) string {
	if st.StartTime.IsZero() {
		return none
	}
	end := now
	if !st.CompletionTime.IsZero() {
		end = st.CompletionTime
	} else if c := st.Condition(v4.JobFailed); c != nil {
		end = c.Time
	}
	return humanDuration(end.Sub(st.StartTime))
}

func (d *describer) job(j *v4.Job) {
	s, set := &j.Spec, j.Spec.Settings()
	st := j.Status
	d.kv("Status", "%s", orNone(st.Phase))
	d.kv("Completions", "%d/%d succeeded (%s)", st.Succeeded, set.Completions, orNone(s.CompletionMode))
	d.kv("Parallelism", "%d", set.Parallelism)
	d.kv("Runs", "%d active, %d failed (backoffLimit %d), %d ignored", st.Active, st.Failed, set.BackoffLimit, st.Ignored)
	if st.CompletedIndexes != "" {
		d.kv("Completed Indexes", "%s", st.CompletedIndexes)
	}
	if s.ActiveDeadlineSeconds > 0 {
		d.kv("Deadline", "%ds", s.ActiveDeadlineSeconds)
	}
	if ttl := s.TTLSecondsAfterFinished; ttl != nil {
		d.kv("TTL", "deleted %ds after it finished", *ttl)
	}
	if s.Suspend {
		d.kv("Suspend", "true")
	}
	if !st.StartTime.IsZero() {
		d.kv("Started", "%s (%s)", st.StartTime.Format(time.RFC3339), jobDuration(st, d.now))
	}
	if st.Message != "" {
		d.kv("Message", "%s", st.Message)
	}
	d.priority(&s.Scheduling)
	d.nominated("run", st.Nominated)
	if fp := s.PodFailurePolicy; fp != nil {
		d.section("Pod Failure Policy", func() {
			for _, r := range fp.Rules {
				if e := r.OnExitCodes; e != nil {
					d.line(fmt.Sprintf("%s when %s exit code %s %v", r.Action, orTask(e.ContainerName), e.Operator, e.Values))
				}
			}
		})
	}
	if len(st.Conditions) > 0 {
		d.section("Conditions", func() {
			for _, c := range st.Conditions {
				d.line(fmt.Sprintf("%s=%s %s %s: %s", c.Type, c.Status, c.Time.Format(time.RFC3339), orNone(c.Reason), c.Message))
			}
		})
	}
	d.jobRecords(st.Finished)
	d.policies(nil, j.KillPolicy, j.Constraint)
	d.template(&s.Template)
}

func orTask(name string) string {
	if name == "" {
		return "any task's"
	}
	return name + "'s"
}

// jobRecords lists the runs that ended last, newest last.
func (d *describer) jobRecords(recs []v4.JobRunRecord) {
	if len(recs) == 0 {
		return
	}
	d.section("Finished Runs", func() {
		for _, r := range recs {
			line := fmt.Sprintf("index %d attempt %d %s on %s: %s, exit code %d, %s", r.Index, r.Attempt, r.TaskGroup, orNone(r.Node),
				r.Result, r.ExitCode, humanDuration(r.FinishedAt.Sub(r.StartedAt)))
			if r.Message != "" {
				line += ": " + r.Message
			}
			d.line(line)
		}
	})
}
