package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func busy(ports ...v4.BusyPort) nodeOpt {
	return func(n *v4.Node) { n.Status.BusyPorts = append(n.Status.BusyPorts, ports...) }
}

func hostPorts(ps []v4.AllocatedPort) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.HostPort
	}
	return out
}

// Random ports skip the ports a node reports held by other programs, on either
// transport, and the placement says which it passed over.
func TestRandomPortsAvoidBusyPorts(t *testing.T) {
	n := node("n1", ranges(v4.PortRange{Begin: 31000, End: 31009}),
		busy(v4.BusyPort{Port: 31000, Protocol: "tcp"}, v4.BusyPort{Port: 31002, Protocol: "udp", Holder: "dnsmasq (pid 9)"}))
	req := request(webApp, nil, 2)
	req.RandomPorts = []v4.AllocatedPort{{Name: "http", Protocol: "tcp"}, {Name: "dns", Protocol: "udp"}}
	res := snapshotOf([]*v4.Node{n}).Place(req, Options{})
	if len(res.Placements) != 2 {
		t.Fatalf("placed %d: %v", len(res.Placements), res.Reason)
	}
	if got := hostPorts(res.Placements[0].Ports); !slices.Equal(got, []int{31001, 31003}) {
		t.Errorf("first instance got %v, want [31001 31003]", got)
	}
	if got := hostPorts(res.Placements[1].Ports); !slices.Equal(got, []int{31004, 31005}) {
		t.Errorf("second instance got %v, want [31004 31005]", got)
	}
	for _, p := range res.Placements[0].Ports {
		if !p.Random {
			t.Errorf("port %v not marked random", p)
		}
	}
	if got := res.Placements[0].PassedOver; !slices.Equal(got, []int{31000, 31002}) {
		t.Errorf("passed over %v, want [31000 31002]", got)
	}
}

// A range full of other programs' ports fits nothing, and the reason says so.
func TestRandomPortsRangeFullOfBusyPorts(t *testing.T) {
	n := node("n1", ranges(v4.PortRange{Begin: 31000, End: 31001}),
		busy(v4.BusyPort{Port: 31000, Protocol: "tcp"}, v4.BusyPort{Port: 31001, Protocol: "tcp"}))
	req := request(webApp, nil, 1)
	req.RandomPorts = []v4.AllocatedPort{{Name: "http", Protocol: "tcp"}}
	res := snapshotOf([]*v4.Node{n}).Place(req, Options{})
	if len(res.Placements) != 0 {
		t.Fatalf("placed on %v", res.Placements[0].Ports)
	}
	if want := "1 node: 1 no free port in 31000-31001 (2 held by other programs)"; res.Reason.String() != want {
		t.Errorf("reason %q, want %q", res.Reason, want)
	}
	if res.Reason.Main() != CheckPorts {
		t.Errorf("main check %q", res.Reason.Main())
	}
}

// A fixed port another program holds on the transport asked for makes the node
// infeasible, naming the port and its holder; held on the other transport it is free.
func TestFixedPortBusyMakesNodeInfeasible(t *testing.T) {
	nodes := []*v4.Node{
		node("n1", busy(v4.BusyPort{Port: 8080, Protocol: "tcp", Holder: "nginx (pid 812)"})),
		node("n2", busy(v4.BusyPort{Port: 8080, Protocol: "udp"})),
		node("n3", busy(v4.BusyPort{Port: 8080, Protocol: "tcp"})),
	}
	req := request(webApp, nil, 1)
	req.FixedPorts = []v4.AllocatedPort{{Name: "http", HostPort: 8080, Protocol: "http"}}
	s := snapshotOf(nodes)
	if got := feasible(s, req); !slices.Equal(got, []string{"n2"}) {
		t.Fatalf("feasible %v, want [n2]", got)
	}
	req.Node = "n1"
	res := s.Place(req, Options{})
	if len(res.Placements) != 0 || res.Reason.String() != "1 node: 1 port 8080/tcp held by nginx" {
		t.Fatalf("placements %v reason %q", res.Placements, res.Reason)
	}
	req.Node = "n3"
	if res := s.Place(req, Options{}); !strings.Contains(res.Reason.String(), "port 8080/tcp held by another program") {
		t.Fatalf("reason %q", res.Reason)
	}
}

// The ports a run found taken at its start are skipped on that node only, although the
// node does not report them (yet); as a fixed port they keep the request off the node.
func TestTakenPortsOfTheLastStart(t *testing.T) {
	nodes := []*v4.Node{node("n1", ranges(v4.PortRange{Begin: 31000, End: 31009})), node("n2", ranges(v4.PortRange{Begin: 31000, End: 31009}))}
	req := request(webApp, nil, 1)
	req.Node = "n1"
	req.RandomPorts = []v4.AllocatedPort{{Name: "http"}}
	req.TakenPorts = map[string][]int{"n1": {31000, 31001}}
	s := snapshotOf(nodes)
	res := s.Place(req, Options{})
	if len(res.Placements) != 1 || res.Placements[0].Ports[0].HostPort != 31002 {
		t.Fatalf("placements %+v reason %v", res.Placements, res.Reason)
	}
	if got := res.Placements[0].PassedOver; !slices.Equal(got, []int{31000, 31001}) {
		t.Errorf("passed over %v", got)
	}
	req.Node = "n2"
	if res := s.Place(req, Options{}); len(res.Placements) != 1 || res.Placements[0].Ports[0].HostPort != 31000 {
		t.Fatalf("n2: %+v", res.Placements)
	}

	fixed := request(webApp, nil, 1)
	fixed.FixedPorts = []v4.AllocatedPort{{Name: "http", HostPort: 8080}}
	fixed.TakenPorts = map[string][]int{"n1": {8080}}
	if got := feasible(s, fixed); !slices.Equal(got, []string{"n2"}) {
		t.Fatalf("feasible %v, want [n2]", got)
	}
	if why := s.compile(fixed, Options{}).firstFailure(s.byName["n1"]); why != "port 8080 taken at the last start" {
		t.Errorf("n1: %q", why)
	}
}

// A node that stops reporting a port frees it again, and a clone keeps the busy ports it
// was made with.
func TestBusyPortsFollowTheNode(t *testing.T) {
	n := node("n1", ranges(v4.PortRange{Begin: 31000, End: 31009}), busy(v4.BusyPort{Port: 31000, Protocol: "tcp"}))
	s := snapshotOf([]*v4.Node{n})
	clone := s.Clone()
	n.Status.BusyPorts = nil
	s.SetNode(n)
	req := request(webApp, nil, 1)
	req.RandomPorts = []v4.AllocatedPort{{Name: "http"}}
	for name, snap := range map[string]*Snapshot{"updated": s, "clone": clone} {
		res := snap.Clone().Place(req, Options{})
		want := map[string]int{"updated": 31000, "clone": 31001}[name]
		if len(res.Placements) != 1 || res.Placements[0].Ports[0].HostPort != want {
			t.Errorf("%s: %s", name, fmt.Sprint(res.Placements))
		}
	}
}
