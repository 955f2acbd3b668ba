package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// cronJobSpec is a cronjob in namespace e2ecron whose job runs one process with cmd,
// named after cmd's program (a process must be what procName says once started).
func cronJobSpec(name, schedule, policy, cmd string) string {
	return fmtSpec(`{"apiVersion":"v4","kind":"cronjob","metadata":{"name":%q,"namespace":"e2ecron"},
	"spec":{"schedule":%q,"concurrencyPolicy":%q,"jobTemplate":{"killPolicy":{"gracePeriod":1},"spec":{"template":{"spec":{
		"processes":[{"procName":%q,"startCmd":%q,"startGracePeriod":1,"resources":{"limits":{"cpu":"0.1","memory":"32"}}}]}}}}}}`,
		name, schedule, policy, strings.Fields(cmd)[0], "exec "+cmd)
}

// cronRuns lists the jobs (or workflows: plural, decoded for their metadata) that cron
// object parent created, by name.
func (s *devServer) cronRuns(plural, label, parent string) []v4.Job {
	s.t.Helper()
	var list struct {
		Items []v4.Job `json:"items"`
	}
	out := s.mustBerth("get", plural, "-n", "e2ecron", "-o", "json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		s.t.Fatalf("decode %s: %v\n%s", plural, err, out)
	}
	list.Items = slices.DeleteFunc(list.Items, func(j v4.Job) bool { return j.Metadata.Labels[label] != parent })
	slices.SortFunc(list.Items, func(a, b v4.Job) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
	return list.Items
}

// Cronjobs and cronworkflows against the real binary, on one server (which admits
// sub-minute schedules) and one process agent: an `@every 2s` cronjob under Forbid
// whose runs last 5 s never overlap; under Replace the running one is replaced; a
// trigger starts a run at once; a cronworkflow creates workflow objects.
func TestCron(t *testing.T) {
	requireRoot(t)
	s := startServer(t, t.TempDir(), "--allow-sub-minute-schedules")
	startAgent(t, s, "cron", "35120-35149", "--docker", "off")
	s.cleanupOwners("e2ecron", "jobs", 60*time.Second)
	s.cleanupOwners("e2ecron", "cronworkflows", 30*time.Second)
	s.cleanupOwners("e2ecron", "cronjobs", 60*time.Second)

	t.Run("forbid", func(t *testing.T) {
		s.applySpec(t, cronJobSpec("forbid", "@every 2s", "Forbid", "sleep 5"))
		var runs []v4.Job
		waitUntil(t, 60*time.Second, "two finished runs of the Forbid cronjob", func() bool {
			runs = s.cronRuns("jobs", v4.CronJobLabel, "forbid")
			done := 0
			for _, j := range runs {
				if j.Status.Phase == v4.JobComplete {
					done++
				}
			}
			return done >= 2
		})
		s.mustBerth("delete", "cronjob", "forbid", "-n", "e2ecron")
		// Each run started after the one before it completed: never two at once.
		for i := 1; i < len(runs); i++ {
			prev, next := runs[i-1].Status, runs[i].Status
			if prev.CompletionTime.IsZero() || next.StartTime.Before(prev.CompletionTime) {
				t.Errorf("run %s started at %s, before %s completed (%s)", runs[i].Metadata.Name, next.StartTime,
					runs[i-1].Metadata.Name, prev.CompletionTime)
			}
		}
	})

	t.Run("replace", func(t *testing.T) {
		s.applySpec(t, cronJobSpec("replace", "@every 3s", "Replace", "sleep 60"))
		var first string
		waitUntil(t, 30*time.Second, "the first run of the Replace cronjob", func() bool {
			if runs := s.cronRuns("jobs", v4.CronJobLabel, "replace"); len(runs) > 0 {
				first = runs[0].Metadata.Name
			}
			return first != ""
		})
		waitUntil(t, 30*time.Second, "the first run replaced by a later one", func() bool {
			runs := s.cronRuns("jobs", v4.CronJobLabel, "replace")
			return len(runs) == 1 && runs[0].Metadata.Name != first
		})
		out := s.mustBerth("describe", "cronjob", "replace", "-n", "e2ecron")
		if !strings.Contains(out, "Replace") || !strings.Contains(out, "Replaced") {
			t.Errorf("describe lacks the policy or the Replaced event:\n%s", out)
		}
		s.mustBerth("delete", "cronjob", "replace", "-n", "e2ecron")
	})

	t.Run("trigger", func(t *testing.T) {
		s.applySpec(t, cronJobSpec("daily", "@daily", "Forbid", "echo by hand"))
		out := s.mustBerth("cronjob", "trigger", "daily", "-n", "e2ecron")
		name, _, ok := strings.Cut(strings.TrimPrefix(out, "job/"), " ")
		if !ok || !strings.HasPrefix(name, "daily-m") {
			t.Fatalf("trigger answered %q", out)
		}
		waitUntil(t, 30*time.Second, "the triggered run to complete", func() bool {
			runs := s.cronRuns("jobs", v4.CronJobLabel, "daily")
			return len(runs) == 1 && runs[0].Metadata.Name == name && runs[0].Status.Phase == v4.JobComplete
		})
		if out := s.mustBerth("get", "cronjobs", "-n", "e2ecron"); !strings.Contains(out, "daily") || !strings.Contains(out, "@daily") {
			t.Errorf("berth get cronjobs:\n%s", out)
		}
	})

	t.Run("cronworkflow", func(t *testing.T) {
		// The workflow controller runs workflows; this checks the objects are created.
		s.applySpec(t, `{"apiVersion":"v4","kind":"cronworkflow","metadata":{"name":"wf","namespace":"e2ecron"},
			"spec":{"schedule":"@every 2s","concurrencyPolicy":"Allow","workflowSpec":{"entrypoint":"main",
			"templates":[{"name":"main","process":{"procName":"main","startCmd":"true"}}]}}}`)
		waitUntil(t, 30*time.Second, "two workflows of the cronworkflow", func() bool {
			return len(s.cronRuns("workflows", v4.CronWorkflowLabel, "wf")) >= 2
		})
		s.mustBerth("delete", "cronworkflow", "wf", "-n", "e2ecron")
		waitUntil(t, 30*time.Second, "the cronworkflow's workflows deleted with it", func() bool {
			return len(s.cronRuns("workflows", v4.CronWorkflowLabel, "wf")) == 0
		})
	})
}
