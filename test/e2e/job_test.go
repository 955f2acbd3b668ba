package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// jobSpec is a job in namespace e2ejob running one process with cmd; spec is more keys
// of the job's spec (JSON, after the template).
func jobSpec(name, cmd, spec string) string {
	return fmtSpec(`{"apiVersion":"v4","kind":"job","metadata":{"name":%q,"namespace":"e2ejob"},"killPolicy":{"gracePeriod":1},
	"spec":{"template":{"spec":{"processes":[{"procName":"work","startCmd":%q,"startGracePeriod":1,
		"resources":{"limits":{"cpu":"0.1","memory":"32"}}}]}}%s}}`, name, cmd, spec)
}

func (s *devServer) job(name string) *v4.Job {
	s.t.Helper()
	var j v4.Job
	if err := json.Unmarshal([]byte(s.mustBerth("get", "job", name, "-n", "e2ejob", "-o", "json")), &j); err != nil {
		s.t.Fatal(err)
	}
	return &j
}

// Jobs against the real binary, on one server and one process agent: an Indexed job of
// 20 completions, 5 at a time, whose runs each write their BERTH_JOB_INDEX; and a job
// whose runs fail, retried until its backoffLimit.
func TestJobs(t *testing.T) {
	requireRoot(t)
	s := startServer(t, t.TempDir())
	startAgent(t, s, "jobs", "34600-34649", "--docker", "off")
	s.cleanupOwners("e2ejob", "jobs", 60*time.Second)

	t.Run("indexed", func(t *testing.T) {
		dir := t.TempDir()
		passable(t, filepath.Join(dir, "x"))
		// The runs are unprivileged users of the agent's (one per task group): the
		// directories, and the file they all append to, are theirs to write.
		for _, d := range []string{"", "done", "running"} {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(dir, d), 0o777); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "width"), nil, 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, "width"), 0o666); err != nil {
			t.Fatal(err)
		}
		// Each run marks itself running, samples how many run, and writes its index; the
		// samples bound what ran at once (parallelism), whatever the timing.
		cmd := fmtSpec(`cd %s && touch running/$BERTH_JOB_INDEX && sleep 0.3 && ls running | wc -l >> width && `+
			`rm running/$BERTH_JOB_INDEX && echo "$BERTH_JOB_NAME $BERTH_JOB_INDEX" > done/$BERTH_JOB_INDEX`, dir)
		s.applySpec(t, jobSpec("indexed", cmd, `,"completions":20,"parallelism":5,"completionMode":"Indexed"`))
		var j *v4.Job
		waitUntil(t, 120*time.Second, "the indexed job to complete", func() bool {
			j = s.job("indexed")
			return j.Status.Phase == v4.JobComplete || j.Status.Phase == v4.JobFailed
		})
		st := j.Status
		if st.Phase != v4.JobComplete || st.Succeeded != 20 || st.Failed != 0 || st.CompletedIndexes != "0-19" || st.CompletionTime.IsZero() {
			t.Fatalf("status %+v", st)
		}
		for i := range 20 {
			b, err := os.ReadFile(filepath.Join(dir, "done", strconv.Itoa(i)))
			if err != nil || strings.TrimSpace(string(b)) != "indexed "+strconv.Itoa(i) {
				t.Errorf("index %d wrote %q (%v)", i, b, err)
			}
		}
		b, err := os.ReadFile(filepath.Join(dir, "width"))
		if err != nil {
			t.Fatal(err)
		}
		widths := strings.Fields(string(b))
		if len(widths) != 20 {
			t.Errorf("%d runs sampled, want 20 (one run per index): %v", len(widths), widths)
		}
		for _, w := range widths {
			if n, _ := strconv.Atoi(w); n < 1 || n > 5 {
				t.Errorf("%s runs at once, parallelism is 5", w)
			}
		}
		out := s.mustBerth("get", "jobs", "-n", "e2ejob")
		if !strings.Contains(out, "Complete") || !strings.Contains(out, "20/20") {
			t.Errorf("berth get jobs:\n%s", out)
		}
		if tgs := s.taskGroups("e2ejob", "indexed"); len(tgs) != 20 {
			t.Errorf("%d task groups kept, want the 20 finished runs", len(tgs))
		}
	})

	t.Run("backoff limit", func(t *testing.T) {
		s.applySpec(t, jobSpec("failing", "echo failing; exit 3", `,"backoffLimit":2`))
		var j *v4.Job
		waitUntil(t, 60*time.Second, "the failing job to fail", func() bool {
			j = s.job("failing")
			return j.Status.Phase == v4.JobFailed
		})
		st := j.Status
		if c := st.Condition(v4.JobFailed); c == nil || c.Reason != v4.ReasonBackoffLimit || st.Failed != 3 || st.Active != 0 {
			t.Fatalf("status %+v", st)
		}
		var attempts []int
		for _, r := range st.Finished {
			if r.Result != "Failed" || r.ExitCode != 3 || r.Node != "jobs" {
				t.Errorf("record %+v", r)
			}
			attempts = append(attempts, r.Attempt)
		}
		if !slices.Equal(attempts, []int{0, 1, 2}) {
			t.Errorf("attempts %v, want 0, 1, 2", attempts)
		}
		out := s.mustBerth("describe", "job", "failing", "-n", "e2ejob")
		if !strings.Contains(out, v4.ReasonBackoffLimit) || !strings.Contains(out, "exit code 3") {
			t.Errorf("berth describe job:\n%s", out)
		}
	})
}

// A job of containers on Docker: each run ends at once (a main container that exits
// right after its start has ended, not failed to start) and sees the job's env; any
// failure would fail the job (backoffLimit 0).
func TestJobContainers(t *testing.T) {
	requireDocker(t)
	s := startServer(t, t.TempDir())
	startDockerAgent(t, s, "jobs-docker", "34650-34699")
	s.cleanupOwners("e2ejob", "jobs", 60*time.Second)
	spec := fmtSpec(`{"apiVersion":"v4","kind":"job","metadata":{"name":"cjob","namespace":"e2ejob"},"killPolicy":{"gracePeriod":1},
	"spec":{"completions":3,"parallelism":3,"completionMode":"Indexed","backoffLimit":0,
		"template":{"spec":{"containers":[%s]}}}}`,
		container("main", `[ "$BERTH_JOB_NAME" = cjob ] && [ -n "$BERTH_JOB_INDEX" ] && exit 0; exit 9`, ""))
	s.applySpec(t, spec)
	var j *v4.Job
	waitUntil(t, 90*time.Second, "the container job to finish", func() bool {
		j = s.job("cjob")
		return j.Status.Phase == v4.JobComplete || j.Status.Phase == v4.JobFailed
	})
	if st := j.Status; st.Phase != v4.JobComplete || st.Succeeded != 3 || st.CompletedIndexes != "0-2" {
		t.Fatalf("status %+v", st)
	}
}
