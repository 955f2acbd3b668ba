package scheduler

import (
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestRequestPinnedToNode(t *testing.T) {
	dep := AppKey{Kind: v4.KindDependency, Namespace: "infra", Name: "logagent"}
	cases := []struct {
		name   string
		nodes  []*v4.Node
		pin    string
		want   string // node placed on, "" when unplaced
		reason string
	}{
		{"pinned to the fuller node", []*v4.Node{node("big", capacity(16, 32000, 100000)), node("small", capacity(2, 2000, 100000))}, "small", "small", ""},
		{"pinned node full", []*v4.Node{node("big"), node("small", capacity(0.5, 2000, 100000))}, "small", "", "1 node: 1 insufficient cpu"},
		{"pinned node disabled", []*v4.Node{node("big"), node("off", func(n *v4.Node) { n.Spec.Disabled = true })}, "off", "", "1 node: 1 node disabled"},
		{"pinned node unknown", []*v4.Node{node("big")}, "gone", "", "no nodes"},
		{"not pinned", []*v4.Node{node("big", capacity(16, 32000, 100000)), node("small", capacity(2, 2000, 100000))}, "", "big", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshotOf(tc.nodes)
			req := request(dep, nil, 1)
			req.Node = tc.pin
			res := s.Place(req, Options{})
			switch {
			case tc.want == "" && len(res.Placements) != 0:
				t.Fatalf("placed on %s, want unplaced", res.Placements[0].Node)
			case tc.want == "":
				if res.Reason == nil || res.Reason.String() != tc.reason {
					t.Errorf("reason = %v, want %q", res.Reason, tc.reason)
				}
			case len(res.Placements) != 1 || res.Placements[0].Node != tc.want:
				t.Fatalf("placements %+v, want one on %s", res.Placements, tc.want)
			}
		})
	}
}
