package controller

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
)

// TestSchedulerMetrics: placements, unplaced instances by the kind of check that
// rejected the most nodes, and the time of each request; the names pass Prometheus's lint.
func TestSchedulerMetrics(t *testing.T) {
	m := NewMetrics()
	s := scheduler.NewSnapshot()
	s.SetNode(&v4.Node{Metadata: v4.ObjectMeta{Name: "n1"}, Spec: v4.NodeSpec{Allocatable: v4.NodeResources{CPU: 2, MemoryMB: 1000, DiskMB: 1000}},
		Status: v4.NodeStatus{Phase: v4.NodeReady}})
	req := &scheduler.Request{App: scheduler.AppKey{Kind: v4.KindApplication, Namespace: "ns", Name: "web"},
		Indexes: []int{0, 1, 2}, Resources: v4.NodeResources{CPU: 0.9, MemoryMB: 100}}
	res := m.place(s, req, scheduler.Options{})
	if len(res.Placements) != 2 {
		t.Fatalf("placed %d, want 2 (cpu for two)", len(res.Placements))
	}
	if got := testutil.ToFloat64(m.placements); got != 2 {
		t.Errorf("placements %g, want 2", got)
	}
	if got := testutil.ToFloat64(m.unplaced.WithLabelValues(scheduler.CheckResources)); got != 1 {
		t.Errorf("unplaced by resources %g, want 1", got)
	}
	if n := testutil.CollectAndCount(m.placeDuration); n != 1 {
		t.Errorf("%d duration series", n)
	}
	m.observeReconcile("application", 3*time.Millisecond, nil, 0)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collectors()...)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
	// A nil Metrics records nothing and places all the same.
	var none *Metrics
	if res := none.place(s, &scheduler.Request{App: req.App, Indexes: []int{5}, Resources: v4.NodeResources{CPU: 0.1}}, scheduler.Options{}); len(res.Placements) != 1 {
		t.Fatal("a nil Metrics did not place")
	}
	none.observeReconcile("application", time.Millisecond, nil, 0)
}
