package engine

import (
	"fmt"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// MaxStarts bounds a pass's starts; More says the rest waits for the next pass, which
// starts it without starting anything twice.
func TestMaxStarts(t *testing.T) {
	items := make([]string, 25)
	for i := range items {
		items[i] = fmt.Sprintf("%d", i)
	}
	s := newSim(t, `{"kind":"workflow","metadata":{"name":"w"},"spec":{"entrypoint":"main","templates":[
	 {"name":"main","steps":[[{"name":"x","template":"t","withItems":[`+strings.Join(items, ",")+`]}]]},
	 {"name":"t","container":{"image":"i"}}]}}`)
	s.in.MaxStarts = 10
	seen := map[string]bool{}
	for i, want := range []int{10, 10, 5} {
		p := s.pass()
		if len(p.Start) != want || p.More != (i < 2) {
			t.Fatalf("pass %d: %d starts, more %v", i, len(p.Start), p.More)
		}
		for _, st := range p.Start {
			if seen[st.NodeID] {
				t.Fatalf("%s started twice", st.Name)
			}
			seen[st.NodeID] = true
		}
	}
	loop := s.in.Nodes[NodeID("uid-1", "w[0].x", 0)]
	if len(loop.Children) != 25 {
		t.Errorf("the loop has %d children", len(loop.Children))
	}
}

// Stop fails the workflow "Stopped" and stops its steps, then runs the exit handler,
// which is not stopped; Terminate runs no exit handler.
func TestShutdown(t *testing.T) {
	doc := `{"kind":"workflow","metadata":{"name":"w"},"spec":{"entrypoint":"main","onExit":"bye","templates":[
	 {"name":"main","steps":[[{"name":"a","template":"t"}],[{"name":"b","template":"t"}]]},
	 {"name":"t","container":{"image":"i"}},{"name":"bye","container":{"image":"bye"}}]}}`
	s := newSim(t, doc)
	s.pass()
	s.in.Shutdown = v4.ShutdownStop
	p := s.pass()
	if len(p.Stop) != 1 || len(p.Start) != 1 || p.Start[0].Name != "w.onExit" || p.Phase != v4.WfRunning {
		t.Fatalf("stop: stops %v, starts %v, phase %s", p.Stop, names(p.Start), p.Phase)
	}
	if again := s.pass(); len(again.Stop) != 0 {
		t.Fatalf("the exit handler was stopped: %v", again.Stop)
	}
	s.finishRunning(succeed)
	if p = s.pass(); p.Phase != v4.WfFailed || p.Message != "Stopped" {
		t.Errorf("after the exit handler: %s %q", p.Phase, p.Message)
	}

	s = newSim(t, doc)
	s.pass()
	s.in.Shutdown = v4.ShutdownTerminate
	p = s.pass()
	if len(p.Stop) != 1 || len(p.Start) != 0 || p.Phase != v4.WfFailed || p.Message != "Terminated" {
		t.Errorf("terminate: stops %v, starts %v, %s %q", p.Stop, names(p.Start), p.Phase, p.Message)
	}
}

// RetryNodes removes the failed steps and what a failure decided, reopens the nodes
// above them and keeps the succeeded steps; a pass then starts only the failed one.
func TestRetryNodes(t *testing.T) {
	s := newSim(t, diamond)
	s.pass()
	s.finishRunning(func(Start) (string, *v4.WfOutputs) { return v4.WfSucceeded, outParams("x", "v") })
	s.pass()
	s.finishRunning(func(st Start) (string, *v4.WfOutputs) {
		if st.Name == "d.B" {
			return v4.WfFailed, nil
		}
		return v4.WfSucceeded, nil
	})
	if p := s.pass(); p.Phase != v4.WfFailed {
		t.Fatalf("phase %s", p.Phase)
	}
	keep, removed := RetryNodes("d", s.in.Nodes)
	if len(removed) == 0 || keep[NodeID("uid-1", "d.A", 0)].Phase != v4.WfSucceeded || keep[NodeID("uid-1", "d", 0)].Phase != v4.WfRunning {
		t.Fatalf("removed %v, kept %v", removed, keep)
	}
	s.in.Nodes = keep
	s.started = nil
	p := s.pass()
	if got := names(p.Start); len(got) != 1 || got[0] != "d.B" {
		t.Fatalf("the retry starts %v, want only d.B", got)
	}
	if p.Start[0].Template.Container.Args[0] != "v" {
		t.Errorf("A's kept output not passed: %v", p.Start[0].Template.Container.Args)
	}
}
