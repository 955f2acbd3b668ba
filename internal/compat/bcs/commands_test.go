package bcs

import (
	"fmt"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/bcs/bcswire"
)

// A node's free ports are its ranges cut at the ports held by its task groups and by
// other programs; a port outside the ranges, or at a range's edge, cuts nothing more.
func TestFreePorts(t *testing.T) {
	n := &v4.Node{Spec: v4.NodeSpec{PortRanges: []v4.PortRange{{Begin: 100, End: 105}, {Begin: 200, End: 200}}},
		Status: v4.NodeStatus{BusyPorts: []v4.BusyPort{{Port: 103}}}}
	tgs := []*v4.TaskGroup{{Spec: v4.TaskGroupSpec{Ports: []v4.AllocatedPort{{HostPort: 100}, {HostPort: 105}, {HostPort: 8080}, {HostPort: 200}}}}}
	var got []string
	for _, r := range freePorts(n, tgs) {
		got = append(got, fmt.Sprintf("%d-%d", r.Begin, r.End))
	}
	if strings.Join(got, " ") != "101-102 104-104" {
		t.Errorf("free ports %v", got)
	}
	if r := freePorts(&v4.Node{}, nil); len(r) != 1 || r[0] != v4.DefaultPortRange {
		t.Errorf("without ranges: %v", r)
	}
}

// An offer decodes as BCS's OfferWithDelta; what its task groups reserve is taken off,
// never below zero.
func TestOfferOf(t *testing.T) {
	n := &v4.Node{Metadata: v4.ObjectMeta{Name: "n1"}, Spec: v4.NodeSpec{Hostname: "h1", IP: "10.0.0.1",
		Allocatable: v4.NodeResources{CPU: 2, MemoryMB: 1024, DiskMB: 10}}}
	tgs := []*v4.TaskGroup{{Spec: v4.TaskGroupSpec{Resources: v4.NodeResources{CPU: 0.5, MemoryMB: 2048}}}}
	var o bcswire.OfferWithDelta
	if err := bcswire.Decode(mustJSON(t, offerOf(n, tgs)), &o); err != nil {
		t.Fatal(err)
	}
	if *o.Resources[0].Scalar.Value != 1.5 || *o.Resources[1].Scalar.Value != 0 || *o.Attributes[0].Name != "InnerIP" {
		t.Errorf("offer %s", mustJSON(t, offerOf(n, tgs)))
	}
}

// An exec ID carries the task and the command and nothing create_exec did not answer
// decodes; a command is bounded.
func TestExecIDAndLimits(t *testing.T) {
	s := execSpec{Namespace: "a", TaskGroup: "0.web.a.c.1", Task: "web", Cmd: []string{"sh", "-c", "echo hi"}}
	got, err := parseExecID(s.id())
	if err != nil || got.TaskGroup != s.TaskGroup || strings.Join(got.Cmd, " ") != "sh -c echo hi" {
		t.Fatalf("round trip: %v %+v", err, got)
	}
	for _, id := range []string{"", "!!", "e30", strings.Repeat("A", maxExecID+1)} { // e30 is {}
		if _, err := parseExecID(id); err == nil {
			t.Errorf("exec_id %.20q accepted", id)
		}
	}
	for _, req := range []createExecRequest{
		{Cmd: []string{"sh"}},
		{ContainerID: "c"},
		{ContainerID: "c", Cmd: []string{""}},
		{ContainerID: "c", Cmd: make([]string, maxExecArgs+1)},
		{ContainerID: "c", Cmd: []string{strings.Repeat("x", maxExecBytes+1)}},
	} {
		if req.check() == nil {
			t.Errorf("create_exec %+v accepted", req)
		}
	}
}

// resize_exec finds a session by its exec ID and who started it, and not after it ended.
func TestExecSessions(t *testing.T) {
	var e execSessions
	a, b := credential{1}, credential{2}
	s := &execSession{}
	remove := e.add("id", a, s)
	if e.find("id", a) != s || e.find("id", b) != nil || e.find("other", a) != nil {
		t.Fatal("find")
	}
	remove()
	if e.find("id", a) != nil || len(e.byID) != 0 {
		t.Fatal("found after removal")
	}
}

// The registry's bound counts sessions, not exec IDs: the sessions one exec ID starts
// again and again fill it too, and one over it is not kept.
func TestExecSessionsBound(t *testing.T) {
	var e execSessions
	who := credential{1}
	var removes []func()
	for range maxExecSessions {
		removes = append(removes, e.add("id", who, &execSession{}))
	}
	over := &execSession{}
	e.add("id", who, over)()
	e.add("other", who, over)
	if e.find("id", who) == over || e.find("other", who) != nil {
		t.Fatal("a session over the bound was kept")
	}
	for _, remove := range removes {
		remove()
	}
	if len(e.byID) != 0 || e.n != 0 {
		t.Fatalf("left after removal: %d IDs, %d sessions", len(e.byID), e.n)
	}
}
