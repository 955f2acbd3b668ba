package scheduler

import (
	"fmt"
	"runtime"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// BenchmarkPreempt: the preempting placement of docs/benchmarks.md. 5,000 nodes of the
// benchmark shape (4 cpu, 32,000 MB) run 50,000 task groups, ten per node, of 500
// applications at priorities 0 to 9 (0.39 cpu, 3,000 MB each: the nodes are full); a
// tenth of the applications have a disruption budget. One op asks for one instance of
// 1.5 cpu and 6,000 MB at priority 100: Place finds no node, Preempt chooses the victims
// (preempt), or the whole PlaceOrPreempt of a plan (place-or-preempt).
func BenchmarkPreempt(b *testing.B) {
	s := benchNodes(5000)
	nodes := s.sortedNodes()
	for i := range 50000 {
		app := AppKey{Kind: v4.KindApplication, Namespace: fmt.Sprintf("ns%d", i%50), Name: fmt.Sprintf("app%d", i%500)}
		s.SetTaskGroup(&v4.TaskGroup{
			Metadata: v4.ObjectMeta{Namespace: app.Namespace, Name: fmt.Sprintf("%d.%s", i/500, app.Name)},
			Spec: v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: app.Kind, Name: app.Name}, Index: i / 500, Node: nodes[i%5000].name,
				Resources: v4.NodeResources{CPU: 0.39, MemoryMB: 3000}, Priority: (i / 7) % 10},
			Status: v4.TaskGroupStatus{Phase: v4.StatusRunning},
		})
		if i < 500 && i%10 == 0 {
			s.SetDisruptionBudget(app, 100, 1)
		}
	}
	req := &Request{App: AppKey{Kind: v4.KindApplication, Namespace: "bench", Name: "urgent"}, Indexes: []int{0},
		Resources: v4.NodeResources{CPU: 1.5, MemoryMB: 6000}, Priority: 100}
	if r := s.Place(req, Options{}); len(r.Placements) != 0 {
		b.Fatal("the cluster is not full")
	}
	b.Run("preempt", func(b *testing.B) {
		b.ReportAllocs()
		var victims int
		for b.Loop() {
			p := s.Preempt(req, Options{})
			if p == nil {
				b.Fatal("no preemption")
			}
			victims = len(p.Victims)
		}
		b.ReportMetric(float64(victims), "victims")
	})
	// The placement that fails first (it explains why), on the live snapshot.
	b.Run("place-fails", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r := s.Place(req, Options{}); len(r.Placements) != 0 {
				b.Fatal("placed")
			}
		}
	})
	// The whole placement: Place fails (and explains), Preempt chooses, the victims are
	// taken off and the instance placed; the snapshot's clone (and collecting its
	// garbage) is outside the timer.
	b.Run("place-or-preempt", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			c := s.Clone()
			runtime.GC() // the clone's garbage is the benchmark's, not the placement's
			b.StartTimer()
			if res, pre := c.PlaceOrPreempt(req, Options{}, 1); len(res.Placements) != 1 || len(pre) != 1 {
				b.Fatalf("placed %d, preempted %d", len(res.Placements), len(pre))
			}
		}
	})
}
