package scheduler

import (
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestNodeAndAvoidNode(t *testing.T) {
	nodes := []*v4.Node{node("a"), node("b", capacity(0.5, 16000, 100000)), node("c")}
	tests := []struct {
		name        string
		only, avoid string
		wantNode    string
		wantReason  string
	}{
		{name: "pinned to a", only: "a", wantNode: "a"},
		{name: "pinned to c", only: "c", wantNode: "c"},
		{name: "pinned to a node that cannot take it explains that node only", only: "b", wantReason: "1 node: 1 insufficient cpu"},
		{name: "pinned to an unknown node", only: "zz", wantReason: "no nodes"},
		{name: "avoiding a goes elsewhere", avoid: "a", wantNode: "c"},
		{name: "avoiding c goes elsewhere", avoid: "c", wantNode: "a"},
		{name: "pinned and avoided", only: "a", avoid: "a", wantReason: "no nodes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshotOf(nodes)
			req := request(webApp, nil, 1)
			req.Node, req.AvoidNode = tc.only, tc.avoid
			res := s.Place(req, Options{})
			if tc.wantNode != "" {
				if len(res.Placements) != 1 || res.Placements[0].Node != tc.wantNode {
					t.Fatalf("placements %+v (reason %v), want on %s", res.Placements, res.Reason, tc.wantNode)
				}
				return
			}
			if len(res.Placements) != 0 || res.Reason == nil || res.Reason.String() != tc.wantReason {
				t.Fatalf("placements %+v reason %v, want none because %q", res.Placements, res.Reason, tc.wantReason)
			}
		})
	}
}
