package scheduler

import (
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestResourcesIncludeOverhead(t *testing.T) {
	s := snapshotOf([]*v4.Node{node("small", capacity(1, 1000, 1000)), node("big", capacity(2, 1064, 1000))})
	req := request(webApp, nil, 1)
	req.Resources = v4.NodeResources{CPU: 0.5, MemoryMB: 1000}
	// 1000 MB + 64 MB overhead does not fit "small".
	assertNodes(t, feasible(s, req), []string{"big"})
	// The placement records the overhead apart, for the task group to show it.
	fresh := snapshotOf([]*v4.Node{node("big", capacity(2, 1064, 1000))})
	if res := fresh.Place(req, Options{}); len(res.Placements) != 1 || res.Placements[0].Overhead.MemoryMB != 64 ||
		res.Placements[0].Resources.MemoryMB != 1064 {
		t.Errorf("placements %+v, want 1064 MB of which 64 MB overhead", res.Placements)
	}

	req.Resources = v4.NodeResources{CPU: 2, MemoryMB: 10}
	if got := feasible(s, req); len(got) != 0 {
		t.Errorf("2 cpu + 0.01 overhead fits nowhere, got %v", got)
	}
	req.Resources = v4.NodeResources{DiskMB: 2000}
	res := s.Place(req, Options{})
	if res.Reason == nil || res.Reason.String() != "2 nodes: 2 insufficient disk" {
		t.Errorf("reason = %v", res.Reason)
	}
	req.Resources = v4.NodeResources{Extended: map[string]float64{"nvidia.com/gpu": 1}}
	if got := feasible(s, req); len(got) != 0 {
		t.Errorf("no node has the extended resource, got %v", got)
	}
}

func TestResourcesAreConsumedAndFreed(t *testing.T) {
	s := snapshotOf([]*v4.Node{node("n1", capacity(4, 32000, 100000))})
	req := request(webApp, nil, 3)
	req.Resources = v4.NodeResources{CPU: 1.7, MemoryMB: 6000}
	res := s.Place(req, Options{})
	if len(res.Placements) != 2 || len(res.Unplaced) != 1 {
		t.Fatalf("two of 1.7 cpu fit a 4-cpu node: placed %d", len(res.Placements))
	}
	if !strings.Contains(res.Reason.String(), "insufficient cpu") {
		t.Errorf("reason %v", res.Reason)
	}
	// The stored task group replaces the placement instead of counting twice.
	p := res.Placements[0]
	s.SetTaskGroup(&v4.TaskGroup{Metadata: v4.ObjectMeta{Namespace: webApp.Namespace, Name: p.Name},
		Spec:   v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: webApp.Kind, Name: webApp.Name}, Index: p.Index, Node: p.Node, Resources: p.Resources, Attributes: p.Attributes},
		Status: v4.TaskGroupStatus{Phase: v4.StatusRunning}})
	half := request(webApp, nil, 1)
	half.Resources = v4.NodeResources{CPU: 0.5, MemoryMB: 100}
	if got := feasible(s, half); len(got) != 1 {
		t.Errorf("0.58 cpu is left (not counted twice): 0.5 + overhead must fit, got %v", got)
	}
	// A task group that ends frees its resources.
	s.SetTaskGroup(&v4.TaskGroup{Metadata: v4.ObjectMeta{Namespace: webApp.Namespace, Name: p.Name},
		Spec:   v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: webApp.Kind, Name: webApp.Name}, Index: p.Index, Node: p.Node, Resources: p.Resources},
		Status: v4.TaskGroupStatus{Phase: v4.StatusFailed}})
	s.RemoveTaskGroup(webApp.Namespace, res.Placements[1].Name)
	if got := len(s.Place(req, Options{}).Placements); got != 2 {
		t.Errorf("after both ended two fit again, placed %d", got)
	}
}

func TestPorts(t *testing.T) {
	s := snapshotOf([]*v4.Node{node("n1", ranges(v4.PortRange{Begin: 31000, End: 31002})), node("n2", ranges(v4.PortRange{Begin: 31000, End: 31001}))})
	req := request(webApp, and(data("hostname", v4.OpCluster, v4.ValueText, "n1")), 1)
	req.FixedPorts = []v4.AllocatedPort{{Name: "http", HostPort: 8899}}
	req.RandomPorts = []v4.AllocatedPort{{Name: "metric"}, {Name: "admin"}}
	res := s.Place(req, Options{})
	if len(res.Placements) != 1 {
		t.Fatal(res.Reason)
	}
	got := res.Placements[0].Ports
	if len(got) != 3 || got[0].HostPort != 8899 || got[1].HostPort != 31000 || got[2].HostPort != 31001 {
		t.Errorf("ports = %+v, want 8899 then the lowest free 31000, 31001", got)
	}
	// 8899 is now in use on n1; only one random port is left there.
	res = s.Place(request(webApp, and(data("hostname", v4.OpCluster, v4.ValueText, "n1")), 1), Options{})
	if len(res.Placements) != 1 {
		t.Fatal("a request without ports still fits")
	}
	req.Indexes = []int{5}
	if r := s.Place(req, Options{}); r.Reason == nil || r.Reason.String() != "2 nodes: 1 failed constraint hostname CLUSTER [n1], 1 port 8899 in use" {
		t.Errorf("reason = %v", r.Reason)
	}
	req.FixedPorts = nil
	req.Constraint = nil
	req.RandomPorts = []v4.AllocatedPort{{Name: "a"}, {Name: "b"}}
	r := s.Place(req, Options{})
	if len(r.Placements) != 1 || r.Placements[0].Node != "n2" {
		t.Fatalf("two random ports only fit n2 now: %+v %v", r.Placements, r.Reason)
	}
	if r := s.Place(req, Options{}); r.Reason == nil || !strings.Contains(r.Reason.String(), "no free port in 31000-31002") {
		t.Errorf("reason = %v", r.Reason)
	}
}

func TestSpreadAndBinpack(t *testing.T) {
	nodes := []*v4.Node{node("a"), node("b"), node("c")}
	spread := snapshotOf(nodes).Place(request(webApp, nil, 3), Options{})
	seen := map[string]bool{}
	for _, p := range spread.Placements {
		seen[p.Node] = true
	}
	if len(seen) != 3 {
		t.Errorf("spread puts 3 instances on 3 empty nodes, got %+v", spread.Placements)
	}
	pack := snapshotOf(nodes).Place(request(webApp, nil, 3), Options{Strategy: Binpack})
	for _, p := range pack.Placements {
		if p.Node != "a" {
			t.Errorf("binpack fills the first node, got %s", p.Node)
		}
	}
	// Spread prefers the emptiest node by ratio (BCS ranks heterogeneous offers this way).
	s := snapshotOf([]*v4.Node{node("big", capacity(48, 512000, 100000)), node("small", capacity(16, 64000, 100000))},
		tg(otherApp, 0, "big", v4.StatusRunning, nil, nil), tg(otherApp, 1, "small", v4.StatusRunning, nil, nil))
	if p := s.Place(request(webApp, nil, 1), Options{}).Placements[0]; p.Node != "big" {
		t.Errorf("spread: want the emptier big node, got %s", p.Node)
	}
	// A request's annotation beats the cluster strategy.
	req := request(webApp, nil, 2)
	req.Strategy = Binpack
	r := snapshotOf(nodes).Place(req, Options{Strategy: Spread})
	if r.Placements[0].Node != r.Placements[1].Node {
		t.Errorf("request binpack must override cluster spread: %+v", r.Placements)
	}
}

func TestPlacementRecordsAndNames(t *testing.T) {
	s := snapshotOf([]*v4.Node{node("n1", text("idc", "a"), text("rack", "r1"))})
	c := and(data("idc", v4.OpMaxPer, v4.ValueText, "3"), data("label", v4.OpExclude, v4.ValueSet, []string{"a:b"}))
	req := request(webApp, c, 2)
	req.Indexes = []int{4, 7}
	res := s.Place(req, Options{Cluster: "prod"})
	if len(res.Placements) != 2 {
		t.Fatal(res.Reason)
	}
	p := res.Placements[1]
	if p.Index != 7 || !strings.HasPrefix(p.Name, "7.web.ns-a.prod.") {
		t.Errorf("placement %+v: want index 7 and a BCS ID 7.web.ns-a.prod.<ts>", p)
	}
	if len(p.Attributes) != 2 || p.Attributes["hostname"] != "n1" || p.Attributes["idc"] != "a" {
		t.Errorf("recorded attributes %v, want hostname and idc only", p.Attributes)
	}
	if got := s.Indexes(webApp); len(got) != 2 || got[0] != 4 || got[1] != 7 {
		t.Errorf("Indexes = %v", got)
	}
}

func TestPlanOnCloneLeavesSnapshot(t *testing.T) {
	s := snapshotOf([]*v4.Node{node("n1")})
	c := s.Clone()
	c.Place(request(webApp, nil, 3), Options{})
	if len(s.Indexes(webApp)) != 0 || len(c.Indexes(webApp)) != 3 {
		t.Errorf("clone must be independent: %v %v", s.Indexes(webApp), c.Indexes(webApp))
	}
	s.RemoveNode("n1")
	if s.Nodes() != 0 || c.Nodes() != 1 {
		t.Error("RemoveNode")
	}
}

func TestReasonString(t *testing.T) {
	c := reasonCounter{nodes: 3000}
	for range 1800 {
		c.add("failed constraint idc MAXPER 5")
	}
	for range 1150 {
		c.add("insufficient memory")
	}
	for range 50 {
		c.add("port 8899 in use")
	}
	want := "3,000 nodes: 1,800 failed constraint idc MAXPER 5, 1,150 insufficient memory, 50 port 8899 in use"
	if got := c.reason().String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := (&Reason{Nodes: 1, Checks: []CheckCount{{"node disabled", 1}}}).String(); got != "1 node: 1 node disabled" {
		t.Errorf("got %q", got)
	}
}

func TestRequestFor(t *testing.T) {
	docs, err := v4.Parse([]byte(`{"apiVersion":"v4","kind":"application","metadata":{"name":"web","namespace":"ns-a","labels":{"app":"web"},
	"annotations":{"berth.io/placement":"binpack"}},"spec":{"instance":2,"template":{"metadata":{"labels":{"tier":"front"}},"spec":{"networkMode":"BRIDGE",
	"containers":[{"image":"x","resources":{"limits":{"cpu":"0.5","memory":"256"}},"ports":[{"name":"http","containerPort":80,"hostPort":0},{"name":"admin","containerPort":81,"hostPort":8081},{"name":"none","containerPort":82,"hostPort":-1}]},
	{"image":"y","resources":{"requests":{"cpu":"0.25","memory":"64","storage":"10"},"extendedResources":[{"name":"gpu","value":1}]}}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req, err := RequestFor(docs[0].Object, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	if req.Resources.CPU != 0.75 || req.Resources.MemoryMB != 320 || req.Resources.DiskMB != 10 || req.Resources.Extended["gpu"] != 1 {
		t.Errorf("resources %+v", req.Resources)
	}
	if len(req.RandomPorts) != 1 || req.RandomPorts[0].Name != "http" || len(req.FixedPorts) != 1 || req.FixedPorts[0].HostPort != 8081 {
		t.Errorf("ports fixed %+v random %+v", req.FixedPorts, req.RandomPorts)
	}
	if req.Strategy != Binpack || req.Labels["app"] != "web" || req.Labels["tier"] != "front" {
		t.Errorf("strategy %q labels %v", req.Strategy, req.Labels)
	}
	if _, err := RequestFor(&v4.ConfigMap{}, nil); err == nil {
		t.Error("configmaps are not placed")
	}
}

func TestDaemonsetOnePerNode(t *testing.T) {
	ds := &v4.Daemonset{TypeMeta: v4.TypeMeta{APIVersion: "v4", Kind: v4.KindDaemonset}, Metadata: v4.ObjectMeta{Name: "agent", Namespace: "ns-a"},
		Spec: v4.DaemonsetSpec{Template: v4.PodTemplate{Spec: v4.PodSpec{Containers: []v4.Container{{Image: "x"}}}}}}
	req, err := RequestFor(ds, []int{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	res := snapshotOf([]*v4.Node{node("n1"), node("n2"), node("off", func(n *v4.Node) { n.Spec.Disabled = true })}).Place(req, Options{Strategy: Binpack})
	if len(res.Placements) != 2 || res.Placements[0].Node == res.Placements[1].Node || len(res.Unplaced) != 1 {
		t.Errorf("a daemonset gets one task group per eligible node: %+v", res.Placements)
	}
	if ds.Constraint != nil {
		t.Error("RequestFor must not change the spec")
	}
}

// TestCheckKinds sorts every check's words this package writes.
func TestCheckKinds(t *testing.T) {
	for check, want := range map[string]string{
		"node not ready": CheckNode, "node disabled": CheckNode, "not node n1": CheckNode,
		"taint dedicated=gpu not tolerated":                   CheckTaint,
		"runtime crun: the node does not offer it":            CheckRuntime,
		"volume data: the node has no healthy node plugin hp": CheckVolume, "volume data: no such volume": CheckVolume,
		"failed constraint idc MAXPER 5": CheckConstraint,
		"insufficient memory":            CheckResources, "insufficient example.com/dev": CheckResources,
		"port 8080 in use": CheckPorts, "no free port in 31000-31000": CheckPorts,
		"no card with 40 free vcuda-core and 8 GiB": CheckGPU, "no card has 80 GiB of memory": CheckGPU,
		"no free whole GPU card": CheckGPU, "no 4 free whole GPU cards": CheckGPU,
		"no GPU inventory (a share of a card needs the agent's card fingerprint)": CheckGPU,
		"no healthy GPU card that takes shares (MIG cards are given out whole)":   CheckGPU,
		"fits, but instances of a GROUPBY must wait for other groups":             CheckGroupBy,
	} {
		if got := CheckKind(check); got != want {
			t.Errorf("%q: %s, want %s", check, got, want)
		}
	}
	if (&Reason{}).Main() != "" || (&Reason{Nodes: 2, Checks: []CheckCount{{"insufficient cpu", 2}}}).Main() != CheckResources {
		t.Error("Main")
	}
}

// A PreferNoSchedule taint puts its node after every other that fits, in spread and
// binpack alike; the node still takes what fits nowhere else, and a toleration lifts it.
func TestPreferNoScheduleComesLast(t *testing.T) {
	avoid := func(n *v4.Node) {
		n.Spec.Taints = append(n.Spec.Taints, v4.Taint{Key: "maint", Value: "yes", Effect: v4.TaintPreferNoSchedule})
	}
	// "a" is the emptiest and the first by name: it would win both strategies untainted.
	nodes := []*v4.Node{node("a", capacity(8, 8000, 1000), avoid), node("b", capacity(2, 2000, 1000))}
	for _, strategy := range []string{Spread, Binpack} {
		r := snapshotOf(nodes).Place(request(webApp, nil, 1), Options{Strategy: strategy})
		if len(r.Placements) != 1 || r.Placements[0].Node != "b" {
			t.Errorf("%v: placements %+v, want b", strategy, r.Placements)
		}
	}
	// Too big for b: a takes it.
	req := request(webApp, nil, 1)
	req.Resources = v4.NodeResources{CPU: 4, MemoryMB: 10}
	if r := snapshotOf(nodes).Place(req, Options{}); len(r.Placements) != 1 || r.Placements[0].Node != "a" {
		t.Errorf("only a fits: placements %+v, reason %v", r.Placements, r.Reason)
	}
	tolerated := request(webApp, and(data("maint", v4.OpToleration, v4.ValueText, "yes")), 1)
	if r := snapshotOf(nodes).Place(tolerated, Options{}); len(r.Placements) != 1 || r.Placements[0].Node != "a" {
		t.Errorf("tolerated: placements %+v, want the emptier a", r.Placements)
	}
}
