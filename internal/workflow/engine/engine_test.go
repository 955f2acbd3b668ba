package engine

import (
	"slices"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

const diamond = `{"kind":"workflow","metadata":{"name":"d"},"spec":{"entrypoint":"main","templates":[
 {"name":"main","dag":{"tasks":[
  {"name":"A","template":"gen"},
  {"name":"B","template":"use","dependencies":["A"],"arguments":{"parameters":[{"name":"v","value":"{{tasks.A.outputs.parameters.x}}"}]}},
  {"name":"C","template":"use","dependencies":["A"],"arguments":{"parameters":[{"name":"v","value":"c"}]}},
  {"name":"D","template":"use","dependencies":["B","C"],"arguments":{"parameters":[{"name":"v","value":"{{tasks.B.status}}"}]}}]}},
 {"name":"gen","outputs":{"parameters":[{"name":"x","valueFrom":{"path":"/x"}}]},"container":{"image":"gen"}},
 {"name":"use","inputs":{"parameters":[{"name":"v"}]},"container":{"image":"use","args":["{{inputs.parameters.v}}"]}}]}}`

func TestDAGDiamond(t *testing.T) {
	s := newSim(t, diamond)
	p := s.pass()
	if got := names(p.Start); !slices.Equal(got, []string{"d.A"}) || p.Phase != v4.WfRunning {
		t.Fatalf("first pass starts %v (%s), want d.A", got, p.Phase)
	}
	s.finishRunning(func(Start) (string, *v4.WfOutputs) { return v4.WfSucceeded, outParams("x", `va"l`) })
	p = s.pass()
	if got := names(p.Start); !slices.Equal(got, []string{"d.B", "d.C"}) {
		t.Fatalf("second pass starts %v, want B and C together", got)
	}
	if args := p.Start[0].Template.Container.Args; !slices.Equal(args, []string{`va"l`}) {
		t.Errorf("B's args = %q, want A's output as it is", args)
	}
	if again := Next(s.in); len(again.Start) != 0 {
		t.Errorf("a pass over the same statuses starts %v again (a new leader must adopt them)", names(again.Start))
	}
	s.finishRunning(succeed)
	p = s.pass()
	if got := names(p.Start); !slices.Equal(got, []string{"d.D"}) || p.Start[0].Template.Container.Args[0] != v4.WfSucceeded {
		t.Fatalf("third pass starts %v %+v, want D with B's status", got, p.Start)
	}
	s.finishRunning(succeed)
	if p = s.pass(); p.Phase != v4.WfSucceeded {
		t.Errorf("phase %s, want Succeeded", p.Phase)
	}
}

func TestNodeIDsStable(t *testing.T) {
	a, b := NodeID("u", "wf.A", 0), NodeID("u", "wf.A", 1)
	if a == b || a != NodeID("u", "wf.A", 0) || a == NodeID("v", "wf.A", 0) {
		t.Errorf("IDs: %s %s", a, b)
	}
	s1, s2 := newSim(t, diamond), newSim(t, diamond)
	if p1, p2 := s1.pass(), s2.pass(); p1.Start[0].NodeID != p2.Start[0].NodeID {
		t.Error("two engines gave the same node different IDs")
	}
}

const depends = `{"kind":"workflow","metadata":{"name":"w"},"spec":{"entrypoint":"main","templates":[
 {"name":"main","dag":{"tasks":[
  {"name":"A","template":"run"},
  {"name":"onfail","template":"run","depends":"A.Failed"},
  {"name":"onok","template":"run","depends":"A"},
  {"name":"after","template":"run","depends":"onok || onfail"}]}},
 {"name":"run","container":{"image":"x"}}]}}`

func TestDependsFailureHandled(t *testing.T) {
	s := newSim(t, depends)
	p := s.runToEnd(func(st Start) (string, *v4.WfOutputs) {
		if st.Name == "w.A" {
			return v4.WfFailed, nil
		}
		return v4.WfSucceeded, nil
	})
	if got := names(s.started); !slices.Equal(got, []string{"w.A", "w.onfail", "w.after"}) {
		t.Errorf("started %v", got)
	}
	if p.Phase != v4.WfSucceeded {
		t.Errorf("phase %s (%s): A's failure was handled by onfail", p.Phase, p.Message)
	}
	omitted := nodeNamed(s, "w.onok")
	if omitted.Phase != v4.WfOmitted {
		t.Errorf("onok is %s, want Omitted", omitted.Phase)
	}
}

func TestDAGFailure(t *testing.T) {
	s := newSim(t, diamond)
	p := s.runToEnd(func(st Start) (string, *v4.WfOutputs) {
		if st.Name == "d.C" {
			return v4.WfFailed, nil
		}
		return v4.WfSucceeded, outParams("x", "1")
	})
	if p.Phase != v4.WfFailed || !strings.Contains(p.Message, `task "C" Failed`) {
		t.Errorf("phase %s %q, want Failed naming C", p.Phase, p.Message)
	}
	if slices.Contains(names(s.started), "d.D") {
		t.Error("D ran though C failed")
	}
}

func nodeNamed(s *sim, name string) v4.WfNodeStatus {
	for _, n := range s.in.Nodes {
		if n.Name == name {
			return n
		}
	}
	s.t.Fatalf("no node %s", name)
	return v4.WfNodeStatus{}
}

const stepsWhen = `{"kind":"workflow","metadata":{"name":"c"},"spec":{"entrypoint":"main","templates":[
 {"name":"main","steps":[[{"name":"flip","template":"flip"}],
  [{"name":"heads","template":"say","when":"{{steps.flip.outputs.result}} == heads","arguments":{"parameters":[{"name":"m","value":"H"}]}},
   {"name":"tails","template":"say","when":"{{steps.flip.outputs.result}} == tails","arguments":{"parameters":[{"name":"m","value":"T"}]}}],
  [{"name":"each","template":"say","withItems":["a",{"k":"b"}],"arguments":{"parameters":[{"name":"m","value":"{{item}}"}]}},
   {"name":"seq","template":"say","withSequence":{"count":"2","start":"5","format":"n%02d"},"arguments":{"parameters":[{"name":"m","value":"{{item}}"}]}}],
  [{"name":"param","template":"say","withParam":"{{steps.each.outputs.result}}","arguments":{"parameters":[{"name":"m","value":"p-{{item}}"}]}}]]},
 {"name":"flip","script":{"command":["sh"],"source":"echo heads"}},
 {"name":"say","inputs":{"parameters":[{"name":"m"}]},"script":{"command":["sh"],"source":"echo {{inputs.parameters.m}}"}}]}}`

func TestStepsWhenAndLoops(t *testing.T) {
	s := newSim(t, stepsWhen)
	p := s.runToEnd(func(st Start) (string, *v4.WfOutputs) {
		if st.Name == "c[0].flip" {
			return v4.WfSucceeded, &v4.WfOutputs{Result: ptr("heads")}
		}
		return v4.WfSucceeded, &v4.WfOutputs{Result: ptr(strings.TrimPrefix(st.Template.Script.Source, "echo "))}
	})
	if p.Phase != v4.WfSucceeded {
		t.Fatalf("phase %s: %s", p.Phase, p.Message)
	}
	var sources []string
	for _, st := range s.started {
		sources = append(sources, st.Name+"="+st.Template.Script.Source)
	}
	want := []string{"c[0].flip=echo heads", "c[1].heads=echo H",
		"c[2].each(0:a)=echo a", `c[2].each(1:{"k":"b"})=echo {"k":"b"}`, "c[2].seq(0:n05)=echo n05", "c[2].seq(1:n06)=echo n06",
		"c[3].param(0:a)=echo p-a", `c[3].param(1:{"k":"b"})=echo p-{"k":"b"}`}
	if !slices.Equal(sources, want) {
		t.Errorf("started\n%s\nwant\n%s", strings.Join(sources, "\n"), strings.Join(want, "\n"))
	}
	if n := nodeNamed(s, "c[1].tails"); n.Phase != v4.WfSkipped || n.Type != v4.WfNodeSkipped {
		t.Errorf("tails: %s %s, want a Skipped node", n.Type, n.Phase)
	}
}

const retried = `{"kind":"workflow","metadata":{"name":"r"},"spec":{"entrypoint":"flaky","templates":[
 {"name":"flaky","retryStrategy":{"limit":2,"backoff":{"duration":"10s","factor":2}},"container":{"image":"x","args":["{{retries}}"]}}]}}`

func TestRetryBackoff(t *testing.T) {
	s := newSim(t, retried)
	fail := func(Start) (string, *v4.WfOutputs) { return v4.WfFailed, nil }
	s.pass()
	s.finishRunning(fail)
	p := s.pass()
	if len(p.Start) != 0 || !p.Requeue.Equal(t0.Add(10*time.Second)) || len(p.Retries) != 1 || p.Retries[0].Attempt != 1 {
		t.Fatalf("after the first failure: starts %v, requeue %v; want none until +10s", names(p.Start), p.Requeue)
	}
	s.in.Now = p.Requeue
	if p = s.pass(); !slices.Equal(names(p.Start), []string{"r(1)"}) || p.Start[0].Template.Container.Args[0] != "1" || p.Start[0].Attempt != 1 {
		t.Fatalf("retry 1: %+v", p.Start)
	}
	s.finishRunning(fail)
	if p = s.pass(); !p.Requeue.Equal(s.in.Now.Add(20 * time.Second)) {
		t.Fatalf("second backoff: requeue %v, want +20s", p.Requeue)
	}
	s.in.Now = p.Requeue
	s.pass()
	s.finishRunning(fail)
	p = s.pass()
	if p.Phase != v4.WfFailed || !strings.Contains(p.Message, "no retries left of 2") {
		t.Errorf("after 3 attempts: %s %q", p.Phase, p.Message)
	}
	if len(s.started) != 3 {
		t.Errorf("%d attempts, want 3", len(s.started))
	}
}

func TestRetryPolicy(t *testing.T) {
	doc := strings.Replace(retried, `"limit":2`, `"limit":2,"retryPolicy":"OnError"`, 1)
	s := newSim(t, doc)
	p := s.runToEnd(func(Start) (string, *v4.WfOutputs) { return v4.WfFailed, nil })
	if p.Phase != v4.WfFailed || len(s.started) != 1 {
		t.Errorf("OnError retried a Failed attempt: %d attempts, %s", len(s.started), p.Phase)
	}
	s = newSim(t, doc)
	p = s.runToEnd(func(st Start) (string, *v4.WfOutputs) {
		if st.Attempt == 0 {
			return v4.WfError, nil
		}
		return v4.WfSucceeded, nil
	})
	if p.Phase != v4.WfSucceeded || len(s.started) != 2 {
		t.Errorf("OnError after an Error: %d attempts, %s", len(s.started), p.Phase)
	}
}
