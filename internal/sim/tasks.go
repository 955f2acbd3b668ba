package sim

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// What a light node's task groups do (Config.MinStartDelay, MaxStartDelay, RunTime,
// ExitCodes): they go Running after the start delay (none by default: at once), and
// then run until stopped or, with a RunTime, end with an exit code drawn from ExitCodes,
// Finish for 0 and Failed otherwise, as the agent's executor reports a task's exit. The
// nodes apply no restart policy: the server's controllers act on the terminal status.

// ExitCode is one exit code of a distribution and its weight.
type ExitCode struct {
	Code, Weight int
}

// MaxExitCodes bounds a distribution.
const MaxExitCodes = 32

// ParseExitCodes reads a distribution of exit codes: CODE:WEIGHT pairs separated by
// commas, as "0:90,1:10" (nine runs in ten exit 0). Codes are 0 to 255, weights 1 to
// 1,000,000.
func ParseExitCodes(s string) ([]ExitCode, error) {
	var out []ExitCode
	seen := map[int]bool{}
	for part := range strings.SplitSeq(s, ",") {
		code, weight, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("%q: give CODE:WEIGHT, as 0:90", part)
		}
		c, err := strconv.Atoi(code)
		if err != nil || c < 0 || c > 255 {
			return nil, fmt.Errorf("%q: the code is 0 to 255", part)
		}
		w, err := strconv.Atoi(weight)
		if err != nil || w < 1 || w > 1_000_000 {
			return nil, fmt.Errorf("%q: the weight is 1 to 1000000", part)
		}
		if seen[c] {
			return nil, fmt.Errorf("code %d is given twice", c)
		}
		seen[c] = true
		out = append(out, ExitCode{Code: c, Weight: w})
	}
	if len(out) > MaxExitCodes {
		return nil, fmt.Errorf("%d codes: at most %d", len(out), MaxExitCodes)
	}
	return out, nil
}

// drawExitCode picks a code from the distribution by weight (0 for none).
func drawExitCode(codes []ExitCode) int {
	total := 0
	for _, c := range codes {
		total += c.Weight
	}
	if total == 0 {
		return 0
	}
	n := rand.N(total)
	for _, c := range codes {
		if n < c.Weight {
			return c.Code
		}
		n -= c.Weight
	}
	return codes[len(codes)-1].Code
}

// startDelay draws a task group's start delay.
func (s *Sim) startDelay() time.Duration {
	d := s.cfg.MinStartDelay
	if span := s.cfg.MaxStartDelay - s.cfg.MinStartDelay; span > 0 {
		d += rand.N(span)
	}
	return d
}

// runningStatus is what an agent reports of a task group whose tasks all started.
func runningStatus(node, ip string, names []string, now time.Time) v4.TaskGroupStatus {
	st := v4.TaskGroupStatus{Phase: v4.StatusRunning, Updated: now, HostIP: ip, StartedAt: now,
		Tasks: make([]v4.TaskStatus, len(names))}
	for i, n := range names {
		st.Tasks[i] = v4.TaskStatus{Name: n, Status: v4.StatusRunning, Info: v4.ContainerInfo{
			ID: fmt.Sprintf("sim-%s-%d", node, now.UnixNano()%1e9+int64(i)), Name: n, StartAt: now, Status: "running",
			NodeAddress: ip, IPAddress: ip, Hostname: node, NetworkMode: "host"}}
	}
	return st
}

// endedStatus is st after its tasks ended: phase (Finish, Failed or Killed) with each
// task's exit code.
func endedStatus(st v4.TaskGroupStatus, phase, msg string, code int, now time.Time) v4.TaskGroupStatus {
	st.Phase, st.Message, st.Updated, st.FinishedAt = phase, msg, now, now
	tasks := make([]v4.TaskStatus, len(st.Tasks))
	for i, t := range st.Tasks {
		t.Status, t.Message = phase, msg
		t.Info.Status, t.Info.ExitCode, t.Info.FinishAt = "exited", code, now
		tasks[i] = t
	}
	st.Tasks = tasks
	return st
}

// simStepResult is what a light node reports of a workflow step that ended with code:
// what the agent collects (docs/workflows.md), with made-up values — an output
// parameter is its default or "sim", the result "sim", and artifacts are recorded at
// their keys without bytes — so the workflow controller runs against thousands of
// simulated nodes as against real ones. Nil for task groups that are not steps.
func simStepResult(io *v4.StepIO, code int) *v4.StepResult {
	if io == nil {
		return nil
	}
	r := &v4.StepResult{Collected: true, ExitCode: code}
	for _, p := range io.Parameters {
		v := "sim"
		if p.Default != nil {
			v = *p.Default
		}
		r.Parameters = append(r.Parameters, v4.WfParameter{Name: p.Name, Value: &v})
	}
	if io.StdoutParameter != "" {
		v := "sim"
		r.Parameters = append(r.Parameters, v4.WfParameter{Name: io.StdoutParameter, Value: &v})
	}
	if io.Result {
		v := "sim"
		r.Result = &v
	}
	for _, a := range io.Artifacts {
		r.Artifacts = append(r.Artifacts, v4.StoredArtifact{Name: a.Name, Repository: a.Repository, Key: a.Key})
	}
	return r
}
