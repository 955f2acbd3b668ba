package engine

import (
	"maps"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// sim is a controller in miniature: it records a pass's updates, starts what the pass
// starts and finishes running Pod nodes as a test says.
type sim struct {
	t       *testing.T
	in      Input
	started []Start // every start, in order
}

func parseWorkflow(t *testing.T, doc string) *v4.Workflow {
	t.Helper()
	docs, err := v4.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("workflow refused: %v", err)
	}
	return docs[0].Object.(*v4.Workflow)
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newSim(t *testing.T, doc string) *sim {
	wf := parseWorkflow(t, doc)
	return &sim{t: t, in: Input{UID: "uid-1", Name: wf.Metadata.Name, Namespace: "ns", Spec: &wf.Spec,
		Nodes: map[string]v4.WfNodeStatus{}, StartedAt: t0, Now: t0}}
}

// pass runs the engine once and records what it decided; started Pod nodes run.
func (s *sim) pass() Plan {
	p := Next(s.in)
	s.in.Nodes = maps.Clone(s.in.Nodes)
	for _, n := range p.Updates {
		s.in.Nodes[n.ID] = n
	}
	for _, st := range p.Start {
		n := s.in.Nodes[st.NodeID]
		n.Phase = v4.WfRunning
		s.in.Nodes[st.NodeID] = n
		s.started = append(s.started, st)
	}
	return p
}

// outcome says how a started step ends.
type outcome func(st Start) (phase string, out *v4.WfOutputs)

func succeed(Start) (string, *v4.WfOutputs) { return v4.WfSucceeded, nil }

// finishRunning ends every running Pod node as out says.
func (s *sim) finishRunning(out outcome) int {
	n := 0
	for _, st := range s.started {
		node := s.in.Nodes[st.NodeID]
		if node.Phase != v4.WfRunning {
			continue
		}
		node.Phase, node.Outputs = out(st)
		node.FinishedAt = s.in.Now
		s.in.Nodes[st.NodeID] = node
		n++
	}
	return n
}

// runToEnd alternates passes and finishing until the workflow ends; it fails the test
// after a bound of passes.
func (s *sim) runToEnd(out outcome) Plan {
	for range 10000 {
		p := s.pass()
		if v4.WfPhaseFinished(p.Phase) {
			return p
		}
		if s.finishRunning(out) == 0 && len(p.Start) == 0 {
			if p.Requeue.IsZero() {
				s.t.Fatalf("the workflow is stuck in %s: nothing runs and no requeue", p.Phase)
			}
			s.in.Now = p.Requeue
		}
	}
	s.t.Fatal("the workflow did not end in 10000 passes")
	return Plan{}
}

// names lists the display names of starts.
func names(starts []Start) []string {
	out := make([]string, len(starts))
	for i, st := range starts {
		out[i] = st.Name
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func outParams(kv ...string) *v4.WfOutputs {
	o := &v4.WfOutputs{}
	for i := 0; i+1 < len(kv); i += 2 {
		o.Parameters = append(o.Parameters, v4.WfParameter{Name: kv[i], Value: ptr(kv[i+1])})
	}
	return o
}
