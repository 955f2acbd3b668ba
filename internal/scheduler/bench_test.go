package scheduler

import (
	"fmt"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// The benchmark shape of docs/benchmarks.md, fixed so results compare with other
// schedulers: N nodes of 4 cpu, 32,000 MB, 100 GB with text attribute rack = r{i mod 75};
// one application of M instances of 1.7 cpu and 6,000 MB (two fit on a node) constrained
// to rack CLUSTER r0..r36 (about half the nodes); binpack scoring, and the same plus rack
// GROUPBY r0..r36. One op places all M instances into an empty snapshot (the clone of the
// empty snapshot is outside the timer).

func benchNodes(n int) *Snapshot {
	s := NewSnapshot()
	defer s.sortedNodes() // a live snapshot keeps its name order between passes
	for i := range n {
		s.SetNode(&v4.Node{
			Metadata: v4.ObjectMeta{Name: fmt.Sprintf("node-%05d", i)},
			Spec: v4.NodeSpec{
				Allocatable: v4.NodeResources{CPU: 4, MemoryMB: 32000, DiskMB: 100000},
				Attributes:  v4.NodeAttributes{Text: map[string]string{"rack": fmt.Sprintf("r%d", i%75)}},
			},
			Status: v4.NodeStatus{Phase: v4.NodeReady},
		})
	}
	return s
}

func racks(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("r%d", i)
	}
	return out
}

func benchRequest(m int, groupBy bool) *Request {
	items := []v4.ConstraintItem{{UnionData: []v4.ConstraintData{{Name: "rack", Operate: v4.OpCluster, Type: v4.ValueSet, Set: &v4.SetValue{Item: racks(37)}}}}}
	if groupBy {
		items = append(items, v4.ConstraintItem{UnionData: []v4.ConstraintData{{Name: "rack", Operate: v4.OpGroupBy, Type: v4.ValueSet, Set: &v4.SetValue{Item: racks(37)}}}})
	}
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	return &Request{
		App:        AppKey{Kind: v4.KindApplication, Namespace: "bench", Name: "web"},
		Constraint: &v4.Constraint{IntersectionItem: items},
		Indexes:    idx,
		Resources:  v4.NodeResources{CPU: 1.7, MemoryMB: 6000},
		Strategy:   Binpack,
	}
}

func BenchmarkPlace(b *testing.B) {
	for _, variant := range []string{"binpack", "groupby"} {
		for _, n := range []int{1000, 5000, 10000} {
			for _, m := range []int{300, 1200} {
				b.Run(fmt.Sprintf("%s/nodes=%d/instances=%d", variant, n, m), func(b *testing.B) {
					base := benchNodes(n)
					req := benchRequest(m, variant == "groupby")
					b.ReportAllocs()
					placed := 0
					for b.Loop() {
						b.StopTimer()
						s := base.Clone()
						b.StartTimer()
						placed = len(s.Place(req, Options{}).Placements)
					}
					// 1,000 nodes hold fewer than 1,200 such instances (about 493 eligible
					// nodes of two each): that shape places what fits and explains the rest.
					b.ReportMetric(float64(placed), "placed")
				})
			}
		}
	}
}

// BenchmarkPlaceConstraintHeavy: UNIQUE hostname + MAXPER idc + EXCLUDE against a
// cluster where another application already runs on a tenth of the nodes.
func BenchmarkPlaceConstraintHeavy(b *testing.B) {
	base := benchNodes(5000)
	for i, name := range base.sortedNodes() {
		name.text["idc"] = fmt.Sprintf("idc%d", i%50)
	}
	other := &Request{App: AppKey{Kind: v4.KindApplication, Namespace: "bench", Name: "db"},
		Labels: map[string]string{"app": "db"}, Indexes: make([]int, 500), Resources: v4.NodeResources{CPU: 0.5, MemoryMB: 1000}}
	for i := range other.Indexes {
		other.Indexes[i] = i
	}
	other.Constraint = &v4.Constraint{IntersectionItem: []v4.ConstraintItem{{UnionData: []v4.ConstraintData{{Name: "hostname", Operate: v4.OpUnique}}}}}
	if r := base.Place(other, Options{}); len(r.Unplaced) > 0 {
		b.Fatal(r.Reason)
	}
	req := &Request{
		App: AppKey{Kind: v4.KindApplication, Namespace: "bench", Name: "web"}, Indexes: make([]int, 1200),
		Resources: v4.NodeResources{CPU: 1, MemoryMB: 2000},
		Constraint: &v4.Constraint{IntersectionItem: []v4.ConstraintItem{
			{UnionData: []v4.ConstraintData{{Name: "hostname", Operate: v4.OpUnique}}},
			{UnionData: []v4.ConstraintData{{Name: "idc", Operate: v4.OpMaxPer, Type: v4.ValueText, Text: &v4.TextValue{Value: "30"}}}},
			{UnionData: []v4.ConstraintData{{Name: "label", Operate: v4.OpExclude, Type: v4.ValueSet, Set: &v4.SetValue{Item: []string{"app:db"}}}}},
		}},
	}
	for i := range req.Indexes {
		req.Indexes[i] = i
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		s := base.Clone()
		b.StartTimer()
		if res := s.Place(req, Options{}); len(res.Unplaced) > 0 {
			b.Fatalf("unplaced %d: %v", len(res.Unplaced), res.Reason)
		}
	}
}
