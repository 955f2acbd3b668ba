package engine

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// randomDAG writes a workflow of n tasks, each depending on a random set of others
// (acyclic: on tasks of lower number), listed in a random order, with dependencies or
// depends at random. It returns the document and each task's dependencies.
func randomDAG(r *rand.Rand, n int) (string, map[string][]string) {
	deps := map[string][]string{}
	var tasks []string
	for i := range n {
		name := fmt.Sprintf("t%d", i)
		var ds []string
		for j := range i {
			if r.IntN(4) == 0 {
				ds = append(ds, fmt.Sprintf("t%d", j))
			}
		}
		deps[name] = ds
		task := fmt.Sprintf(`{"name":%q,"template":"run"`, name)
		switch {
		case len(ds) == 0:
		case r.IntN(2) == 0:
			task += fmt.Sprintf(`,"dependencies":["%s"]`, strings.Join(ds, `","`))
		default:
			task += fmt.Sprintf(`,"depends":%q`, strings.Join(ds, " && "))
		}
		tasks = append(tasks, task+"}")
	}
	r.Shuffle(len(tasks), func(i, j int) { tasks[i], tasks[j] = tasks[j], tasks[i] })
	par := ""
	if r.IntN(3) == 0 {
		par = fmt.Sprintf(`"parallelism":%d,`, 1+r.IntN(4))
	}
	return fmt.Sprintf(`{"kind":"workflow","metadata":{"name":"p"},"spec":{%s"entrypoint":"main","templates":[
 {"name":"main","dag":{"tasks":[%s]}},{"name":"run","container":{"image":"x"}}]}}`, par, strings.Join(tasks, ",")), deps
}

// TestRandomDAGs: whatever the graph and the order steps finish in, when every started
// step succeeds, every step runs once, after all its dependencies have succeeded.
func TestRandomDAGs(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		doc, deps := randomDAG(r, 2+r.IntN(40))
		s := newSim(t, doc)
		runs := map[string]int{}
		for pass := 0; ; pass++ {
			if pass > 10000 {
				t.Fatalf("seed %d: no end", seed)
			}
			p := s.pass()
			for _, st := range p.Start {
				task := strings.TrimPrefix(st.Name, "p.")
				runs[task]++
				for _, d := range deps[task] {
					if n := nodeNamed(s, "p."+d); n.Phase != v4.WfSucceeded {
						t.Fatalf("seed %d: %s started while its dependency %s is %s", seed, task, d, n.Phase)
					}
				}
			}
			if v4.WfPhaseFinished(p.Phase) {
				if p.Phase != v4.WfSucceeded {
					t.Fatalf("seed %d: %s %s", seed, p.Phase, p.Message)
				}
				break
			}
			s.finishSome(r)
		}
		for task := range deps {
			if runs[task] != 1 {
				t.Errorf("seed %d: %s ran %d times", seed, task, runs[task])
			}
		}
	}
}

// finishSome ends a random part (at least one) of the running Pod nodes, successfully.
func (s *sim) finishSome(r *rand.Rand) {
	var running []Start
	for _, st := range s.started {
		if s.in.Nodes[st.NodeID].Phase == v4.WfRunning {
			running = append(running, st)
		}
	}
	r.Shuffle(len(running), func(i, j int) { running[i], running[j] = running[j], running[i] })
	for i, st := range running {
		if i > 0 && r.IntN(2) == 0 {
			continue
		}
		n := s.in.Nodes[st.NodeID]
		n.Phase, n.FinishedAt = v4.WfSucceeded, s.in.Now
		s.in.Nodes[st.NodeID] = n
	}
}
