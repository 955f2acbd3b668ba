package agent

import (
	"slices"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// stepStatus is a finished step's status carrying n bytes of outputs.
func stepStatus(n int) v4.TaskGroupStatus {
	v := strings.Repeat("x", n)
	return v4.TaskGroupStatus{Phase: v4.StatusFinish, Step: &v4.StepResult{Collected: true, Result: &v,
		Parameters: []v4.WfParameter{{Name: "p", Value: &v}}}}
}

// Statuses with large step outputs go in several requests, each under the server's
// body limit; one over the bound alone still goes.
func TestReporterBatchBytes(t *testing.T) {
	r := newReporter(nil, func(string, string) {})
	for _, name := range []string{"a", "b", "c", "d"} {
		r.enqueue("ns", name, stepStatus(v4.MaxStepOutputBytes/4)) // 512 KiB each with the result
	}
	r.enqueue("ns", "small", v4.TaskGroupStatus{Phase: v4.StatusRunning})
	var names []string
	for _, p := range r.oldest() {
		names = append(names, p.name)
	}
	if !slices.Equal(names, []string{"a"}) {
		t.Errorf("first batch %v, want [a]", names)
	}
	r2 := newReporter(nil, func(string, string) {})
	r2.enqueue("ns", "huge", stepStatus(2*maxReportBytes))
	if got := r2.oldest(); len(got) != 1 {
		t.Errorf("a status over the bound alone: %d sent", len(got))
	}
}

func TestReportParts(t *testing.T) {
	rep := v4.AgentReport{}
	sizes := map[string][]byte{}
	for _, name := range []string{"a", "b", "c"} {
		rep.TaskGroups = append(rep.TaskGroups, v4.TaskGroupReport{Namespace: "ns", Name: name})
		sizes[tgKey("ns", name)] = make([]byte, maxReportBytes/2)
	}
	var parts []int
	for part := range reportParts(rep, sizes) {
		parts = append(parts, len(part.TaskGroups))
	}
	if !slices.Equal(parts, []int{1, 1, 1}) {
		t.Errorf("parts %v", parts)
	}
	n := 0
	for part := range reportParts(v4.AgentReport{TaskGroups: []v4.TaskGroupReport{}}, nil) {
		if part.TaskGroups == nil {
			t.Error("the empty report lost its list")
		}
		n++
	}
	if n != 1 {
		t.Errorf("an empty full report: %d parts", n)
	}
}
