package engine

import (
	"slices"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

const withExit = `{"kind":"workflow","metadata":{"name":"e"},"spec":{"entrypoint":"main","onExit":"report","templates":[
 {"name":"main","steps":[[{"name":"work","template":"run","onExit":"cleanup"}]]},
 {"name":"run","container":{"image":"x"}},
 {"name":"cleanup","container":{"image":"c","args":["{{workflow.status}}"]}},
 {"name":"report","container":{"image":"r","args":["{{workflow.status}}","{{workflow.failures}}"]}}]}}`

func TestOnExit(t *testing.T) {
	s := newSim(t, withExit)
	p := s.runToEnd(func(st Start) (string, *v4.WfOutputs) {
		if st.Name == "e[0].work" {
			return v4.WfFailed, nil
		}
		return v4.WfSucceeded, nil
	})
	if got := names(s.started); !slices.Equal(got, []string{"e[0].work", "e[0].work.onExit", "e.onExit"}) {
		t.Fatalf("started %v", got)
	}
	if args := s.started[1].Template.Container.Args; args[0] != v4.WfFailed {
		t.Errorf("the step's exit handler got status %q", args[0])
	}
	if args := s.started[2].Template.Container.Args; args[0] != v4.WfFailed || !strings.Contains(args[1], `"displayName":"work"`) {
		t.Errorf("the workflow's exit handler got %q", args)
	}
	if p.Phase != v4.WfFailed {
		t.Errorf("phase %s, want Failed", p.Phase)
	}
}

func TestOnExitFailureFailsWorkflow(t *testing.T) {
	s := newSim(t, withExit)
	p := s.runToEnd(func(st Start) (string, *v4.WfOutputs) {
		if st.Name == "e.onExit" {
			return v4.WfFailed, nil
		}
		return v4.WfSucceeded, nil
	})
	if p.Phase != v4.WfFailed || !strings.Contains(p.Message, "exit handler") {
		t.Errorf("phase %s %q, want Failed by the exit handler", p.Phase, p.Message)
	}
}

const wide = `{"kind":"workflow","metadata":{"name":"p"},"spec":{"entrypoint":"main","parallelism":2,"templates":[
 {"name":"main","steps":[[{"name":"fan","template":"run","withSequence":{"count":"5"}}]]},
 {"name":"run","container":{"image":"x"}}]}}`

func TestParallelism(t *testing.T) {
	for _, tc := range []struct{ name, doc string }{
		{"workflow", wide},
		{"template", strings.Replace(strings.Replace(wide, `"parallelism":2,`, ``, 1), `{"name":"main",`, `{"name":"main","parallelism":2,`, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, tc.doc)
			for i := 0; ; i++ {
				p := s.pass()
				if len(p.Start) > 2 || i > 10 {
					t.Fatalf("pass %d starts %d", i, len(p.Start))
				}
				if v4.WfPhaseFinished(p.Phase) {
					break
				}
				s.finishRunning(succeed)
			}
			if len(s.started) != 5 {
				t.Errorf("%d started, want 5", len(s.started))
			}
		})
	}
}

func TestDeadlines(t *testing.T) {
	doc := `{"kind":"workflow","metadata":{"name":"d"},"spec":{"entrypoint":"main","activeDeadlineSeconds":100,"templates":[
 {"name":"main","steps":[[{"name":"slow","template":"slow"}],[{"name":"never","template":"slow"}]]},
 {"name":"slow","activeDeadlineSeconds":30,"container":{"image":"x"}}]}}`
	s := newSim(t, doc)
	p := s.pass()
	if !p.Requeue.Equal(t0.Add(30 * time.Second)) {
		t.Errorf("requeue %v, want the step's deadline", p.Requeue)
	}
	s.in.Now = t0.Add(31 * time.Second)
	p = s.pass()
	if len(p.Stop) != 1 || p.Phase != v4.WfFailed {
		t.Errorf("after the step's deadline: stop %v, phase %s", p.Stop, p.Phase)
	}
	// The workflow's deadline stops what runs and starts nothing more.
	s = newSim(t, strings.Replace(doc, `"activeDeadlineSeconds":30,`, ``, 1))
	s.pass()
	s.in.Now = t0.Add(101 * time.Second)
	p = s.pass()
	if len(p.Stop) != 1 || len(p.Start) != 0 || p.Phase != v4.WfFailed || !strings.Contains(p.Message, "activeDeadlineSeconds") {
		t.Errorf("after the workflow's deadline: stop %v start %v phase %s %q", p.Stop, names(p.Start), p.Phase, p.Message)
	}
}

func TestSuspend(t *testing.T) {
	doc := `{"kind":"workflow","metadata":{"name":"s"},"spec":{"entrypoint":"main","templates":[
 {"name":"main","steps":[[{"name":"wait","template":"wait"}],[{"name":"hold","template":"hold"}],[{"name":"go","template":"run"}]]},
 {"name":"wait","suspend":{"duration":"1m"}},{"name":"hold","suspend":{}},{"name":"run","container":{"image":"x"}}]}}`
	s := newSim(t, doc)
	if p := s.pass(); !p.Requeue.Equal(t0.Add(time.Minute)) {
		t.Fatalf("requeue %v, want +1m", p.Requeue)
	}
	s.in.Now = t0.Add(time.Minute)
	s.pass()
	hold := nodeNamed(s, "s[1].hold")
	if hold.Phase != v4.WfRunning {
		t.Fatalf("hold is %s", hold.Phase)
	}
	if p := s.pass(); len(p.Start) != 0 || p.Phase != v4.WfRunning {
		t.Fatal("a suspend step without a duration ended by itself")
	}
	hold.Phase = v4.WfSucceeded // resumed
	s.in.Nodes[hold.ID] = hold
	if p := s.pass(); !slices.Equal(names(p.Start), []string{"s[2].go"}) {
		t.Errorf("after resume: %v", names(p.Start))
	}
	// A suspended workflow starts nothing.
	s = newSim(t, doc)
	s.in.Spec.Suspend = true
	s.in.Now = t0.Add(time.Hour)
	s.pass()
	s.in.Now = t0.Add(2 * time.Hour)
	if p := s.pass(); len(p.Start) != 0 {
		t.Errorf("a suspended workflow started %v", names(p.Start))
	}
}

// A templateRef runs a workflowtemplate's template, whose own steps call the
// workflowtemplate's templates (not the workflow's of the same name).
func TestTemplateRef(t *testing.T) {
	doc := `{"kind":"workflow","metadata":{"name":"t"},"spec":{"entrypoint":"main","templates":[
 {"name":"main","dag":{"tasks":[{"name":"a","templateRef":{"name":"lib","template":"twice"},"arguments":{"parameters":[{"name":"m","value":"hi"}]}},
  {"name":"b","templateRef":{"name":"lib","template":"missing"},"dependencies":["a"]}]}},
 {"name":"echo","container":{"image":"the workflow's"}}]}}`
	s := newSim(t, doc)
	docs, err := v4.Parse([]byte(`{"kind":"workflowtemplate","metadata":{"name":"lib"},"spec":{"templates":[
 {"name":"twice","inputs":{"parameters":[{"name":"m"}]},"steps":[[{"name":"one","template":"echo","arguments":{"parameters":[{"name":"m","value":"{{inputs.parameters.m}}"}]}}]]},
 {"name":"echo","inputs":{"parameters":[{"name":"m"}]},"container":{"image":"lib's","args":["{{inputs.parameters.m}}"]}}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	s.in.Refs = map[string]*v4.WorkflowTemplate{"lib": docs[0].Object.(*v4.WorkflowTemplate)}
	p := s.runToEnd(succeed)
	if len(s.started) != 1 || s.started[0].Template.Container.Image != "lib's" || s.started[0].Template.Container.Args[0] != "hi" {
		t.Errorf("started %+v", s.started)
	}
	if p.Phase != v4.WfFailed || !strings.Contains(p.Message, `task "b" Error`) {
		t.Errorf("a missing referenced template: %s %q", p.Phase, p.Message)
	}
}

func TestContinueOn(t *testing.T) {
	doc := `{"kind":"workflow","metadata":{"name":"k"},"spec":{"entrypoint":"main","templates":[
 {"name":"main","steps":[[{"name":"may-fail","template":"run","continueOn":{"failed":true}},{"name":"ok","template":"run"}],[{"name":"next","template":"run"}]]},
 {"name":"run","container":{"image":"x"}}]}}`
	s := newSim(t, doc)
	p := s.runToEnd(func(st Start) (string, *v4.WfOutputs) {
		if st.Name == "k[0].may-fail" {
			return v4.WfFailed, nil
		}
		return v4.WfSucceeded, nil
	})
	if p.Phase != v4.WfSucceeded || !slices.Contains(names(s.started), "k[1].next") {
		t.Errorf("continueOn.failed: %s, started %v", p.Phase, names(s.started))
	}
	s = newSim(t, strings.Replace(doc, `,"continueOn":{"failed":true}`, ``, 1))
	p = s.runToEnd(func(st Start) (string, *v4.WfOutputs) {
		if st.Name == "k[0].may-fail" {
			return v4.WfFailed, nil
		}
		return v4.WfSucceeded, nil
	})
	if p.Phase != v4.WfFailed || slices.Contains(names(s.started), "k[1].next") {
		t.Errorf("without continueOn: %s, started %v", p.Phase, names(s.started))
	}
}

// A loop task's results: AnySucceeded and AllFailed look at its items.
func TestLoopResults(t *testing.T) {
	doc := `{"kind":"workflow","metadata":{"name":"l"},"spec":{"entrypoint":"main","templates":[
 {"name":"main","dag":{"tasks":[
  {"name":"fan","template":"run","withItems":["a","b","c"]},
  {"name":"some","template":"run","depends":"fan.AnySucceeded"},
  {"name":"none","template":"run","depends":"fan.AllFailed"}]}},
 {"name":"run","container":{"image":"x"}}]}}`
	s := newSim(t, doc)
	p := s.runToEnd(func(st Start) (string, *v4.WfOutputs) {
		if strings.HasPrefix(st.Name, "l.fan(0") {
			return v4.WfSucceeded, nil
		}
		if strings.HasPrefix(st.Name, "l.fan") {
			return v4.WfFailed, nil
		}
		return v4.WfSucceeded, nil
	})
	if got := names(s.started); !slices.Contains(got, "l.some") || slices.Contains(got, "l.none") {
		t.Errorf("started %v", got)
	}
	if p.Phase != v4.WfSucceeded {
		t.Errorf("phase %s (%s): fan's failure was handled by some", p.Phase, p.Message)
	}
}
