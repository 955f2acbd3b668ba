package scheduler

import (
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestPlaceOn(t *testing.T) {
	ds := AppKey{Kind: v4.KindDaemonset, Namespace: "ns-a", Name: "agent"}
	unique := and(data("hostname", v4.OpUnique, 0, nil))
	disabled := func(n *v4.Node) { n.Spec.Disabled = true }
	notReady := func(n *v4.Node) { n.Status.Phase = v4.NodeLost }
	tests := []struct {
		name     string
		node     *v4.Node
		existing []*v4.TaskGroup
		c        *v4.Constraint
		placed   bool
		eligible bool
		reason   string
	}{
		{name: "fits", node: node("n1"), c: unique, placed: true, eligible: true},
		{name: "disabled", node: node("n1", disabled), c: unique, reason: "node disabled"},
		{name: "lost", node: node("n1", notReady), c: unique, reason: "node not ready"},
		{name: "taint", node: node("n1", taint("k", "v")), c: unique, reason: "taint k=v not tolerated"},
		{name: "tolerated", node: node("n1", taint("k", "v")), c: and(data("hostname", v4.OpUnique, 0, nil), data("k", v4.OpToleration, 3, "v")), placed: true, eligible: true},
		{name: "constraint", node: node("n1", text("zone", "b")), c: and(data("zone", v4.OpCluster, 3, "a")), reason: "failed constraint zone CLUSTER"},
		{name: "no room", node: node("n1", capacity(0.5, 16000, 100000)), c: unique, eligible: true, reason: "insufficient cpu"},
		{name: "already has one", node: node("n1"), c: unique, eligible: true, reason: "failed constraint hostname UNIQUE",
			existing: []*v4.TaskGroup{tg(ds, 0, "n1", v4.StatusRunning, map[string]string{"hostname": "n1"}, nil)}},
		{name: "failed one does not count", node: node("n1"), c: unique, placed: true, eligible: true,
			existing: []*v4.TaskGroup{tg(ds, 0, "n1", v4.StatusFailed, map[string]string{"hostname": "n1"}, nil)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := snapshotOf([]*v4.Node{tt.node, node("other")}, tt.existing...)
			req := request(ds, tt.c, 1)
			req.Indexes = []int{3}
			fits := s.PlaceOn(req, []string{"n1"}, Options{})
			if len(fits) != 1 {
				t.Fatalf("%d answers", len(fits))
			}
			f := fits[0]
			if f.Ready != (tt.node.Status.Phase == v4.NodeReady && !tt.node.Spec.Disabled) {
				t.Errorf("ready %v", f.Ready)
			}
			if (f.Placement != nil) != tt.placed || f.Eligible != tt.eligible || !strings.HasPrefix(f.Reason, tt.reason) {
				t.Fatalf("got %+v", f)
			}
			if f.Placement != nil && (f.Placement.Node != "n1" || f.Placement.Index != 3) {
				t.Errorf("placement %+v", f.Placement)
			}
			if got := s.Indexes(ds); tt.placed && len(got) != len(tt.existing)+1-countEnded(tt.existing) {
				t.Errorf("the snapshot does not hold the placement: %v", got)
			}
		})
	}
}

func TestPlaceOnUnknownNodeAndOnePerNode(t *testing.T) {
	ds := AppKey{Kind: v4.KindDaemonset, Namespace: "ns-a", Name: "agent"}
	s := snapshotOf([]*v4.Node{node("n1"), node("n2")})
	req := request(ds, and(data("hostname", v4.OpUnique, 0, nil)), 3)
	fits := s.PlaceOn(req, []string{"n1", "gone", "n1"}, Options{})
	if fits[0].Placement == nil || fits[1].Reason != "node not found" || fits[1].Eligible || fits[1].Ready || fits[2].Placement != nil {
		t.Errorf("got %+v", fits)
	}
	if fits := s.PlaceOn(request(ds, nil, 0), []string{"n2"}, Options{}); len(fits) != 0 {
		t.Errorf("no index, no answer: %+v", fits)
	}
}

func countEnded(tgs []*v4.TaskGroup) int {
	n := 0
	for _, t := range tgs {
		if !countsForConstraints(t.Status.Phase) {
			n++
		}
	}
	return n
}
