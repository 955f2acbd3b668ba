package controller

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store/storetest"
)

// wfOneStep is a workflow of one step of cpu cores at priority 100, with the scheduling
// keys sched (JSON, after the priority).
func wfOneStep(cpu, sched string) string {
	return fmt.Sprintf(`{"entrypoint":"main","priority":100%s,"templates":[
	 {"name":"main","process":{"procName":"m","startCmd":"./m","resources":{"limits":{"cpu":%q,"memory":"64"}}}}]}`, sched, cpu)
}

const preemptLower = `,"preemptionPolicy":"PreemptLowerPriority"`

// A workflow's step that fits nowhere preempts lower priorities as a job's run does:
// its nomination is in the workflow's status, the victim stops with an event naming the
// step, and the step is placed on the node once the victim ended. preemptionPolicy
// Never, an equal priority, the revocable tier and a disruption budget preempt nothing.
func TestWorkflowStepPreemption(t *testing.T) {
	for _, c := range []struct {
		name           string
		lowPrio        int
		budget, sched  string
		wantPreemption bool
	}{
		{name: "lower priority", sched: preemptLower, wantPreemption: true},
		{name: "policy Never", sched: `,"preemptionPolicy":"Never"`},
		{name: "equal priority", lowPrio: 100, sched: preemptLower},
		{name: "revocable", sched: preemptLower + `,"tier":"revocable"`},
		{name: "budget", budget: `{"maxUnavailable":0}`, sched: preemptLower},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newWfEnv(t)
			e.fillNodeAt(c.lowPrio, c.budget)
			e.applyWf(wfOneStep("1.5", c.sched))
			if c.wantPreemption {
				e.stepPreempts()
				return
			}
			eventsEventually(t, "the step's FailedScheduling", v4.EventFilter{Kind: v4.KindWorkflow, Namespace: "ctl", Name: "wf"},
				func(ev []v4.Event) bool { return countReason(ev, "FailedScheduling") > 0 })
			time.Sleep(300 * time.Millisecond) // a pass that would preempt has run
			if v, noms := e.victims("low"), e.wf().Status.Nominated; len(v) != 0 || len(noms) != 0 {
				t.Errorf("victims %v, nominations %+v; want none", v, noms)
			}
		})
	}
}

// stepPreempts checks that step "wf" of the env's workflow preempts one task group of
// "low", and is placed on its node once the victim ended.
func (e *env) stepPreempts() {
	e.t.Helper()
	e.eventually("a nomination with one victim", func() bool {
		noms := e.wf().Status.Nominated
		return len(noms) == 1 && len(noms[0].Victims) == 1 && len(e.victims("low")) == 1
	})
	nom, victims := e.wf().Status.Nominated[0], e.victims("low")
	if nom.Node != "n1" || nom.Step == "" || !slices.Equal(nom.Victims, victimIDs("ctl", victims)) {
		e.t.Fatalf("nomination %+v, victims %v", nom, victims)
	}
	if h := nom.Hold; h == nil || h.Resources.CPU != 1.5 || h.Resources.MemoryMB != 64 || h.Priority != 100 {
		e.t.Errorf("the nomination's hold %+v, want the step's 1.5 cpu and 64 MB at priority 100", h)
	}
	const preemptor = "workflow ctl/wf step wf ("
	for _, tg := range e.taskGroups("low") {
		if slices.Contains(victims, tg.Metadata.Name) &&
			(tg.Spec.Desired != v4.DesiredStopped || !strings.HasPrefix(tg.Metadata.Annotations[v4.PreemptedByAnnotation], preemptor)) {
			e.t.Errorf("victim %s: desired %s, preempted by %q", tg.Metadata.Name, tg.Spec.Desired, tg.Metadata.Annotations[v4.PreemptedByAnnotation])
		}
	}
	eventsEventually(e.t, "the victim's Preempted event", v4.EventFilter{Kind: v4.KindProcess, Namespace: "ctl", Name: "low"},
		func(ev []v4.Event) bool {
			return slices.ContainsFunc(ev, func(x v4.Event) bool { return x.Reason == "Preempted" && strings.Contains(x.Message, preemptor) })
		})
	if len(e.steps()) != 0 {
		e.t.Fatalf("the step started before its victim ended: %v", e.steps())
	}
	e.endVictims()
	tg := e.waitSteps("wf")["wf"]
	if tg.Spec.Node != "n1" || tg.Spec.Priority != 100 || tg.Spec.Index != 0 {
		e.t.Errorf("step on %s, priority %d, index %d; want n1, 100, 0", tg.Spec.Node, tg.Spec.Priority, tg.Spec.Index)
	}
	e.waitWf("the nomination cleared", func(s v4.WorkflowStatus) bool { return len(s.Nominated) == 0 })
}

// A leader change between a step's nomination and its placement: the new leader keeps
// the nomination while a victim still stops (it chooses no other victims and does not
// preempt again), places the step on its node once the victims are gone, and the
// victims' replacements do not take the room.
func TestWorkflowPreemptSurvivesLeaderChange(t *testing.T) {
	e := newTestEnv(t)
	e.node("n1")
	e.eventually("the node cache", func() bool { _, ok := e.caches.For(v4.KindNode).Get("", "n1"); return ok })
	term := func(f *feed.Feed) runner {
		return both{NewWorkflowController(testStore, f, e.opts()), NewAppController(testStore, f, e.opts())}
	}
	stop := e.runWith(e.feed, term)
	e.fillNode("")
	e.applyWf(wfOneStep("3", preemptLower))
	e.eventually("a nomination with two victims", func() bool {
		noms := e.wf().Status.Nominated
		return len(noms) == 1 && len(noms[0].Victims) == 2 && len(e.victims("low")) == 2
	})
	nom, victims := e.wf().Status.Nominated[0], e.victims("low")
	stop() // the leader goes; a new one starts with its own snapshot
	for _, tg := range e.taskGroups("low") {
		if tg.Metadata.Name == victims[0] { // one victim ended meanwhile
			e.report(tg, v4.StatusKilled, time.Now().Add(-time.Minute), time.Now())
		}
	}
	stop2 := e.runWith(feed.New(e.caches, storetest.QuietLogger()), term)
	defer stop2()
	time.Sleep(500 * time.Millisecond) // the new leader's passes while the other victim stops
	if noms := e.wf().Status.Nominated; len(noms) != 1 || !noms[0].At.Equal(nom.At) || !slices.Equal(noms[0].Victims, nom.Victims) || len(e.steps()) != 0 {
		t.Fatalf("after the leader change: nominations %+v, steps %v; want the first %+v kept, no step yet", noms, e.steps(), nom)
	}
	e.endVictims()
	e.eventually("the step placed on n1", func() bool { tg := e.steps()["wf"]; return tg != nil && tg.Spec.Node == "n1" })
	e.waitWf("the nomination cleared", func(s v4.WorkflowStatus) bool { return len(s.Nominated) == 0 })
	e.noExtraVictims(victims)
	events := eventsEventually(t, "the workflow's events", v4.EventFilter{Kind: v4.KindWorkflow, Namespace: "ctl", Name: "wf"},
		func(ev []v4.Event) bool { return countReason(ev, "Preempting") > 0 })
	if n := countReason(events, "Preempting"); n != 1 {
		t.Errorf("%d Preempting events, want the first leader's one", n)
	}
}
