package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

// applyPriority creates a process of instances of cpu each at a priority (as admission
// records it), with an optional disruption budget.
func (e *env) applyPriority(name string, instances int, cpu string, prio int, budget string) {
	e.t.Helper()
	extra := ""
	if budget != "" {
		extra = `,"disruptionBudget":` + budget
	}
	doc := fmt.Sprintf(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":"ctl"},
		"restartPolicy":{"policy":"OnFailure"},
		"spec":{"instance":%d,"priority":%d,"preemptionPolicy":"PreemptLowerPriority"%s,
		"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web","resources":{"limits":{"cpu":%q,"memory":"64"}}}]}}}}`,
		name, instances, prio, extra, cpu)
	docs, err := v4.Parse([]byte(doc))
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := testStore.Apply(context.Background(), docs); err != nil {
		e.t.Fatal(err)
	}
}

// runAll reports every task group of name as Running.
func (e *env) runAllOf(name string) {
	e.t.Helper()
	for _, tg := range e.taskGroups(name) {
		e.report(tg, v4.StatusRunning, time.Now(), time.Time{})
	}
}

// victims are the task groups of name a preemption asked to stop, by name.
func (e *env) victims(name string) []string {
	var out []string
	for _, tg := range e.taskGroups(name) {
		if preempted(tg) {
			out = append(out, tg.Metadata.Name)
		}
	}
	slices.Sort(out)
	return out
}

// fillNode runs four instances of 1.9 cpu of "low" on the env's one node of 8 cpu.
func (e *env) fillNode(budget string) {
	e.t.Helper()
	e.fillNodeAt(0, budget)
}

// fillNodeAt is fillNode with "low" at priority prio.
func (e *env) fillNodeAt(prio int, budget string) {
	e.t.Helper()
	e.applyPriority("low", 4, "1.9", prio, budget)
	e.eventually("4 low instances", func() bool { return len(e.taskGroups("low")) == 4 })
	e.runAllOf("low")
	e.eventually("low running", func() bool { return e.status("low").Running == 4 })
}

// endVictims reports the stopped victims as their agent would once they exited.
func (e *env) endVictims() {
	for _, tg := range e.taskGroups("low") {
		if preempted(tg) && !ended(tg) {
			e.report(tg, v4.StatusKilled, time.Now().Add(-time.Minute), time.Now())
		}
	}
}

func TestPreemptThenPlace(t *testing.T) {
	e := newEnv(t, "node-1")
	e.fillNode(`{"maxUnavailable":2}`)
	e.applyPriority("high", 1, "3", 100, "")
	e.eventually("a nomination with two victims", func() bool {
		s := e.status("high")
		return len(s.Nominated) == 1 && len(s.Nominated[0].Victims) == 2 && len(e.victims("low")) == 2
	})
	if s := e.status("high"); s.Nominated[0].Node != "node-1" || !slices.Equal(sorted(s.Nominated[0].Victims), victimIDs("ctl", e.victims("low"))) {
		t.Fatalf("nomination %+v, victims %v", s.Nominated, e.victims("low"))
	}
	for _, tg := range e.taskGroups("low") {
		if preempted(tg) && tg.Spec.Desired != v4.DesiredStopped {
			t.Errorf("victim %s not asked to stop", tg.Metadata.Name)
		}
	}
	victims := e.victims("low")
	e.endVictims()
	e.eventually("high placed on node-1", func() bool {
		tgs := e.taskGroups("high")
		return len(tgs) == 1 && tgs[0].Spec.Node == "node-1" && tgs[0].Spec.Priority == 100 && len(e.status("high").Nominated) == 0
	})
	// The victims' replacements (OnFailure) wait: the node is full, and nothing more is preempted.
	e.eventually("low waits for room", func() bool {
		s := e.status("low")
		return s.Pending != nil && s.Running == 2
	})
	e.eventually("the victims' runs replaced", func() bool {
		return !slices.ContainsFunc(e.taskGroups("low"), func(tg *v4.TaskGroup) bool { return slices.Contains(victims, tg.Metadata.Name) })
	})
	for _, tg := range e.taskGroups("low") { // the others run on
		if tg.Status.Phase == v4.StatusRunning && stopping(tg) {
			t.Errorf("task group %s: %s, desired %s", tg.Metadata.Name, tg.Status.Phase, tg.Spec.Desired)
		}
	}
	events := eventsEventually(t, "the victims' events", v4.EventFilter{Kind: v4.KindProcess, Namespace: "ctl", Name: "low"},
		func(ev []v4.Event) bool { return countReason(ev, "Preempted") == 2 })
	if countReason(events, "Preempted") != 2 {
		t.Errorf("events %+v", events)
	}
}

func TestPreemptHonoursTheBudget(t *testing.T) {
	e := newEnv(t, "node-1")
	e.fillNode(`{"maxUnavailable":1}`) // two victims are needed, one may go
	e.applyPriority("high", 1, "3", 100, "")
	e.eventually("high reports it cannot be placed", func() bool { return e.status("high").Pending != nil })
	time.Sleep(300 * time.Millisecond) // a pass that would preempt has run
	if v := e.victims("low"); len(v) != 0 {
		t.Errorf("victims %v despite the budget", v)
	}
}

func TestPreemptSurvivesLeaderChange(t *testing.T) {
	e := newTestEnv(t)
	e.node("node-1")
	e.eventually("the node cache", func() bool { _, ok := e.caches.For(v4.KindNode).Get("", "node-1"); return ok })
	stop := e.runController(e.feed)
	e.fillNode("")
	e.applyPriority("high", 1, "3", 100, "")
	e.eventually("a nomination", func() bool { return len(e.status("high").Nominated) == 1 && len(e.victims("low")) == 2 })
	victims := e.victims("low")
	stop() // the leader goes; a new one starts with its own snapshot
	e.endVictims()
	// The victims' replacements (OnFailure) are placed by the new leader too: the room
	// must stay the preemptor's, and no new victims be chosen.
	stop2 := e.runController(feed.New(e.caches, storetest.QuietLogger()))
	defer stop2()
	e.eventually("high placed on node-1", func() bool {
		tgs := e.taskGroups("high")
		return len(tgs) == 1 && tgs[0].Spec.Node == "node-1"
	})
	e.noExtraVictims(victims)
}

func TestNewLeaderStopsRecordedVictims(t *testing.T) {
	e := newTestEnv(t)
	e.node("node-1")
	e.eventually("the node cache", func() bool { _, ok := e.caches.For(v4.KindNode).Get("", "node-1"); return ok })
	stop := e.runController(e.feed)
	e.fillNode("")
	stop()
	// The old leader recorded a nomination and failed before it stopped the victims.
	victim := e.taskGroups("low")[1]
	e.applyPriority("high", 1, "1.5", 100, "")
	o, err := testStore.Get(context.Background(), v4.KindProcess, "ctl", "high")
	if err != nil {
		t.Fatal(err)
	}
	p := o.(*v4.Process)
	p.Status.Nominated = []v4.Nomination{{Index: 0, Node: "node-1", Victims: []string{v4.VictimID("ctl", victim.Metadata.Name)}, At: time.Now().UTC()}}
	if err := testStore.Update(context.Background(), p, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	// A new leader's caches list the store afresh; this test's registry follows it:
	// the new controller starts once it has the nomination.
	e.eventually("the cache has the nomination", func() bool {
		o, ok := e.caches.For(v4.KindProcess).Get("ctl", "high")
		return ok && len(o.(*v4.Process).Status.Nominated) == 1
	})
	stop2 := e.runController(feed.New(e.caches, storetest.QuietLogger()))
	defer stop2()
	e.eventually("the recorded victim stopping", func() bool { return slices.Equal(e.victims("low"), []string{victim.Metadata.Name}) })
	e.endVictims()
	e.eventually("high placed", func() bool { return len(e.taskGroups("high")) == 1 })
	for _, v := range e.victims("low") { // the recorded victim may be replaced already
		if v != victim.Metadata.Name {
			t.Errorf("an extra victim %s (the recorded one was %s)", v, victim.Metadata.Name)
		}
	}
}

// runController runs a feed and an application controller until the returned stop.
func (e *env) runController(f *feed.Feed) (stop func()) {
	return e.runWith(f, func(f *feed.Feed) runner { return NewAppController(testStore, f, e.opts()) })
}

// runWith runs a feed and the controller build makes over it until the returned stop:
// one leader's term.
func (e *env) runWith(f *feed.Feed, build func(*feed.Feed) runner) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	e.ctx = ctx
	done := make(chan struct{}, 2)
	go func() { f.Run(ctx); done <- struct{}{} }()
	c := build(f)
	go func() { c.Run(ctx); done <- struct{}{} }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
			<-done
		}
	}
	e.t.Cleanup(stop)
	return stop
}

func victimIDs(ns string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = v4.VictimID(ns, n)
	}
	return sorted(out)
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

func countReason(events []v4.Event, reason string) int {
	n := 0
	for _, ev := range events {
		if ev.Reason == reason {
			n++
		}
	}
	return n
}

// A job's run preempts like an application's instance: its nomination is in the job's
// status, the victim stops, and the run is placed on its node.
func TestJobPreempts(t *testing.T) {
	e := newJobEnv(t, "node-1")
	e.fillNode("")
	e.applyJob(`,"priority":100,"preemptionPolicy":"PreemptLowerPriority"`)
	e.eventually("a nomination with one victim", func() bool {
		st := e.job().Status
		return len(st.Nominated) == 1 && len(st.Nominated[0].Victims) == 1 && len(e.victims("low")) == 1
	})
	e.endVictims()
	e.eventually("the run placed on node-1", func() bool {
		runs := e.runs()
		return len(runs) == 1 && runs[0].Spec.Node == "node-1" && runs[0].Spec.Priority == 100 && len(e.job().Status.Nominated) == 0
	})
}

// noExtraVictims checks, once the victims' replacements had their passes, that low lost
// no task group beyond victims (the first leader's choice) and runs the 2 left.
func (e *env) noExtraVictims(victims []string) {
	e.t.Helper()
	time.Sleep(300 * time.Millisecond)
	for _, v := range e.victims("low") {
		if !slices.Contains(victims, v) {
			e.t.Errorf("an extra victim after the leader change: %s (the first were %v)", v, victims)
		}
	}
	if s := e.status("low"); s.Running != 2 {
		e.t.Errorf("low runs %d instances, want the 2 that were not preempted", s.Running)
	}
}
