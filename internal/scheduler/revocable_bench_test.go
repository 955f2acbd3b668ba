package scheduler

import (
	"fmt"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// BenchmarkPlaceRevocable is BenchmarkPlace's shape with every node lending: an owner on
// each reserves 3 of its 4 cores and 24,000 of its 32,000 MB and uses 0.5 core and
// 4,000 MB (fresh reports, margin 0.1, bound 0.5); the request is revocable, so each
// node takes one instance (1 free core plus 2 lent), where the same request of the
// guaranteed tier places none.
func BenchmarkPlaceRevocable(b *testing.B) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, n := range []int{1000, 5000} {
		for _, m := range []int{300, 1200} {
			b.Run(fmt.Sprintf("nodes=%d/instances=%d", n, m), func(b *testing.B) {
				base := benchNodes(n)
				owner := AppKey{Kind: v4.KindApplication, Namespace: "bench", Name: "owner"}
				for _, ns := range base.sortedNodes() {
					node := &v4.Node{Metadata: v4.ObjectMeta{Name: ns.name}, Spec: v4.NodeSpec{Allocatable: ns.alloc,
						Attributes: v4.NodeAttributes{Text: ns.text}}, Status: v4.NodeStatus{Phase: v4.NodeReady,
						Revocable: &v4.RevocableStatus{Time: now, UsedCPU: 0.5, UsedMemoryMB: 4000, Margin: 0.1, MaxFraction: 0.5}}}
					base.SetNode(node)
					t := tg(owner, 0, ns.name, v4.StatusRunning, nil, nil)
					t.Metadata.Name = "0.owner." + ns.name
					t.Spec.Resources = v4.NodeResources{CPU: 3, MemoryMB: 24000}
					base.SetTaskGroup(t)
				}
				req := benchRequest(m, false)
				req.Revocable = true
				opts := Options{Now: func() time.Time { return now }}
				b.ReportAllocs()
				placed := 0
				for b.Loop() {
					b.StopTimer()
					s := base.Clone()
					b.StartTimer()
					placed = len(s.Place(req, opts).Placements)
				}
				b.ReportMetric(float64(placed), "placed")
			})
		}
	}
}
