package engine

import (
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// fanOut is a 10,000-step fan-out and fan-in: prepare, a loop of 10,000, then reduce.
const fanOut = `{"kind":"workflow","metadata":{"name":"f"},"spec":{"entrypoint":"main","templates":[
 {"name":"main","steps":[[{"name":"prepare","template":"run"}],[{"name":"map","template":"run","withSequence":{"count":"10000"}}],[{"name":"reduce","template":"run"}]]},
 {"name":"run","container":{"image":"x"}}]}}`

// BenchmarkPassFanOut measures one pass over the fan-out with every map step running:
// the cost the controller pays per pass at the widest point.
func BenchmarkPassFanOut(b *testing.B) {
	t := &testing.T{}
	s := newSim(t, fanOut)
	s.pass()
	s.finishRunning(succeed)
	if p := s.pass(); len(p.Start) != 10000 {
		b.Fatalf("%d started", len(p.Start))
	}
	b.ResetTimer()
	for range b.N {
		if p := Next(s.in); len(p.Start) != 0 || p.Phase != v4.WfRunning {
			b.Fatal("a pass changed something")
		}
	}
}
