package controller

import (
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// evict reports a step evicted as the agent's revocable eviction ends it (Failed, the
// executor's "evicted: ..." message, the main task killed).
func (e *env) evict(tg *v4.TaskGroup) {
	e.t.Helper()
	now := time.Now().UTC()
	e.setStatus(tg, v4.TaskGroupStatus{Phase: v4.StatusFailed, Updated: now, StartedAt: now.Add(-time.Second), FinishedAt: now,
		Message: "evicted: revocable: the owners use 900 MB of 1000 MB", Step: &v4.StepResult{Collected: true, ExitCode: 137},
		Tasks: []v4.TaskStatus{{Name: tg.Spec.Step.Main, Status: v4.StatusFailed, Info: v4.ContainerInfo{ExitCode: 137}}}})
}

// A workflow's resolved priority and tier go on every step's task group; an evicted
// revocable step is retried by its retryStrategy, and without one fails the workflow
// with the eviction named.
func TestWorkflowStepPriorityTierAndEviction(t *testing.T) {
	e := newWfEnv(t)
	e.applyWf(`{"entrypoint":"main","priorityClassName":"high","priority":700,"preemptionPolicy":"PreemptLowerPriority","tier":"revocable",
	 "templates":[
	 {"name":"main","steps":[[{"name":"one","template":"retried"}],[{"name":"two","template":"once"}]]},
	 {"name":"retried","retryStrategy":{"limit":1},"process":{"procName":"r","startCmd":"./r"}},
	 {"name":"once","process":{"procName":"o","startCmd":"./o"}}]}`)
	first := e.waitSteps("wf[0].one(0)")["wf[0].one(0)"]
	if first.Spec.Priority != 700 || !first.Spec.Revocable {
		t.Errorf("step task group: priority %d, revocable %v; want 700 and true", first.Spec.Priority, first.Spec.Revocable)
	}
	e.evict(first)
	again := e.waitSteps("wf[0].one(1)")["wf[0].one(1)"]
	if again.Spec.Priority != 700 || !again.Spec.Revocable {
		t.Errorf("retry: priority %d, revocable %v", again.Spec.Priority, again.Spec.Revocable)
	}
	e.finish(again, 0)
	e.evict(e.waitSteps("wf[1].two")["wf[1].two"])
	st := e.waitWf("Failed", func(s v4.WorkflowStatus) bool { return s.Phase == v4.WfFailed })
	var evicted []string
	for _, n := range st.Nodes {
		if n.Type == v4.WfNodePod && strings.HasPrefix(n.Message, "evicted: revocable:") {
			evicted = append(evicted, n.DisplayName)
		}
	}
	if len(evicted) != 2 || !strings.Contains(st.Message, "evicted") {
		t.Errorf("nodes naming the eviction %v (want one(0)'s and two's), workflow message %q", evicted, st.Message)
	}
}

// Without a class or tier, steps keep priority 0 on the guaranteed tier.
func TestWorkflowStepDefaultPriority(t *testing.T) {
	e := newWfEnv(t)
	e.applyWf(`{"entrypoint":"main","templates":[{"name":"main","process":{"procName":"m","startCmd":"./m"}}]}`)
	tg := e.waitSteps("wf")["wf"]
	if tg.Spec.Priority != 0 || tg.Spec.Revocable {
		t.Errorf("priority %d, revocable %v; want 0 and false", tg.Spec.Priority, tg.Spec.Revocable)
	}
}
