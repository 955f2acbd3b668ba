package scheduler

import (
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func offers(runtimes ...string) nodeOpt { return setAttr(v4.AttrContainerRuntimes, runtimes...) }

// A pod that names a runtime goes only where it is offered, and the nodes that do not
// offer it are counted under the runtime check with the runtime named.
func TestRuntimePlacement(t *testing.T) {
	nodes := []*v4.Node{
		node("a", offers("runc")),
		node("b", offers("runc", "crun")),
		node("c"), // no container runtime reported
		node("d", offers("crun", "runsc"), taint("k", "v")),
	}
	tests := []struct {
		runtime string
		want    []string
	}{
		{"", []string{"a", "b", "c"}},
		{"runc", []string{"a", "b"}},
		{"crun", []string{"b"}},
		{"runsc", nil}, // only on the tainted node
		{"kata", nil},
	}
	for _, tt := range tests {
		t.Run(tt.runtime, func(t *testing.T) {
			s := snapshotOf(nodes)
			req := request(webApp, nil, 1)
			req.Runtime = tt.runtime
			assertNodes(t, feasible(s, req), tt.want)
		})
	}

	s := snapshotOf(nodes)
	req := request(webApp, nil, 3)
	req.Runtime = "crun"
	res := s.Place(req, Options{})
	for _, p := range res.Placements {
		if p.Node != "b" {
			t.Fatalf("placed on %s: %+v", p.Node, res.Placements)
		}
	}
	if len(res.Placements) != 3 {
		t.Fatalf("placements %+v, unplaced %v", res.Placements, res.Unplaced)
	}
	s = snapshotOf(nodes)
	req = request(webApp, nil, 2)
	req.Runtime = "kata"
	res = s.Place(req, Options{})
	if len(res.Placements) != 0 || len(res.Unplaced) != 2 || res.Reason == nil {
		t.Fatalf("kata placed: %+v", res)
	}
	got := res.Reason.String()
	if got != "4 nodes: 3 runtime kata: the node does not offer it, 1 taint k=v not tolerated" {
		t.Errorf("reason %q", got)
	}
	if res.Reason.Main() != CheckRuntime {
		t.Errorf("main check %q", res.Reason.Main())
	}
}

// The runtime comes from the pod template, and a node's daemonset placement (PlaceOn)
// is neither eligible nor placed where the runtime is missing.
func TestRuntimeRequestAndPlaceOn(t *testing.T) {
	app := &v4.Application{}
	app.Kind, app.Metadata = v4.KindApplication, v4.ObjectMeta{Namespace: "ns-a", Name: "web"}
	app.Spec.Template.Spec = v4.PodSpec{Runtime: "crun", NetworkMode: "HOST", Containers: []v4.Container{{Image: "x"}}}
	req, err := RequestFor(app, []int{0})
	if err != nil || req.Runtime != "crun" {
		t.Fatalf("request %+v, %v", req, err)
	}
	s := snapshotOf([]*v4.Node{node("a", offers("runc")), node("b", offers("crun"))})
	fits := s.PlaceOn(req, []string{"a"}, Options{})
	if f := fits[0]; f.Placement != nil || f.Eligible || !f.Ready || f.Reason != "runtime crun: the node does not offer it" {
		t.Errorf("on a: %+v", f)
	}
	req.Indexes = []int{1}
	fits = s.PlaceOn(req, []string{"b"}, Options{})
	if f := fits[0]; f.Placement == nil || !f.Eligible || !strings.HasPrefix(f.Placement.Name, "1.web.ns-a.") {
		t.Errorf("on b: %+v", f)
	}
}
