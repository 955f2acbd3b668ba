package scheduler

import (
	"fmt"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// A process port's hostPort: 0 is a random port of the node's ranges, a number that fixed
// port, -1 no host port at all (docs/spec.md "Ports"), so the task group holds nothing
// for it.
func TestProcessHostPorts(t *testing.T) {
	tests := []struct {
		name     string
		hostPort int
		fixed    []v4.AllocatedPort
		random   []v4.AllocatedPort
		placed   string // the task group's ports once placed
	}{
		{"random", 0, nil, []v4.AllocatedPort{{Name: "p", Protocol: "tcp"}}, "[{p 31000 tcp true}]"},
		{"fixed", 8080, []v4.AllocatedPort{{Name: "p", HostPort: 8080, Protocol: "tcp"}}, nil, "[{p 8080 tcp false}]"},
		{"none", -1, nil, nil, "[]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := fmt.Sprintf(`{"apiVersion":"v4","kind":"process","metadata":{"name":"web","namespace":"ns-a"},"spec":{"instance":1,
				"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web","ports":[{"name":"p","hostPort":%d}]}]}}}}`, tc.hostPort)
			docs, err := v4.Parse([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			req, err := RequestFor(docs[0].Object, []int{0})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(req.FixedPorts) != fmt.Sprint(tc.fixed) || fmt.Sprint(req.RandomPorts) != fmt.Sprint(tc.random) {
				t.Fatalf("fixed %v random %v, want %v and %v", req.FixedPorts, req.RandomPorts, tc.fixed, tc.random)
			}
			res := snapshotOf([]*v4.Node{node("n1", ranges(v4.PortRange{Begin: 31000, End: 31001}))}).Place(req, Options{})
			if len(res.Placements) != 1 {
				t.Fatal(res.Reason)
			}
			if got := fmt.Sprint(res.Placements[0].Ports); got != tc.placed {
				t.Errorf("placed ports %s, want %s", got, tc.placed)
			}
		})
	}
}
