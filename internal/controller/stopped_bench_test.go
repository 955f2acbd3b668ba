package controller

import (
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// A workload of v4.MaxInstances instances, every one stopped (berth stop ... all) and
// none with a run left: what a pass of the deployment's rollout (child.state) and of the
// application controller (the loop over the wanted indexes) look up per index. A scan of
// the list per index made each pass quadratic (docs/benchmarks.md, "Stopped instances").
func BenchmarkStoppedLookupsAllStopped(b *testing.B) {
	n := v4.MaxInstances
	w := &v4.Workload{}
	w.Spec.Instance = n
	for i := range n {
		w.Spec.StoppedInstances = append(w.Spec.StoppedInstances, i)
	}
	ch := &child{w: w, byIndex: map[int][]*v4.TaskGroup{}}
	for b.Loop() {
		if r := ch.state(); len(r.available) != n || !r.available[n-1] {
			b.Fatal("every stopped instance is available")
		}
	}
}
