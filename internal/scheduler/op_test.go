package scheduler

import (
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

type opCase struct {
	name  string
	nodes []*v4.Node
	tgs   []*v4.TaskGroup
	c     *v4.Constraint
	want  []string
}

func runOpCases(t *testing.T, cases []opCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshotOf(tc.nodes, tc.tgs...)
			assertNodes(t, feasible(s, request(webApp, tc.c, 1)), tc.want)
		})
	}
}

var otherApp = AppKey{Kind: v4.KindApplication, Namespace: "ns-b", Name: "db"}

func TestUnique(t *testing.T) {
	three := []*v4.Node{node("n1", text("idc", "a")), node("n2", text("idc", "a")), node("n3", text("idc", "b"))}
	host := map[string]string{"hostname": "n1", "idc": "a"}
	runOpCases(t, []opCase{
		{"no task groups", three, nil, and(data("hostname", v4.OpUnique, 0, nil)), []string{"n1", "n2", "n3"}},
		{"running counts", three, []*v4.TaskGroup{tg(webApp, 0, "n1", v4.StatusRunning, host, nil)}, and(data("hostname", v4.OpUnique, 0, nil)), []string{"n2", "n3"}},
		{"lost counts", three, []*v4.TaskGroup{tg(webApp, 0, "n1", v4.StatusLost, host, nil)}, and(data("hostname", v4.OpUnique, 0, nil)), []string{"n2", "n3"}},
		{"killed counts", three, []*v4.TaskGroup{tg(webApp, 0, "n1", v4.StatusKilled, host, nil)}, and(data("hostname", v4.OpUnique, 0, nil)), []string{"n2", "n3"}},
		{"failed does not count", three, []*v4.TaskGroup{tg(webApp, 0, "n1", v4.StatusFailed, host, nil)}, and(data("hostname", v4.OpUnique, 0, nil)), []string{"n1", "n2", "n3"}},
		{"finish does not count", three, []*v4.TaskGroup{tg(webApp, 0, "n1", v4.StatusFinish, host, nil)}, and(data("hostname", v4.OpUnique, 0, nil)), []string{"n1", "n2", "n3"}},
		{"other application does not count", three, []*v4.TaskGroup{tg(otherApp, 0, "n1", v4.StatusRunning, host, nil)}, and(data("hostname", v4.OpUnique, 0, nil)), []string{"n1", "n2", "n3"}},
		{"attribute value shared by nodes", three, []*v4.TaskGroup{tg(webApp, 0, "n1", v4.StatusRunning, host, nil)}, and(data("idc", v4.OpUnique, 0, nil)), []string{"n3"}},
		{"recorded value, not live", three, []*v4.TaskGroup{tg(webApp, 0, "n3", v4.StatusRunning, map[string]string{"idc": "a"}, nil)}, and(data("idc", v4.OpUnique, 0, nil)), []string{"n3"}},
		{"missing attribute fails", []*v4.Node{node("n1"), node("n2", text("idc", "a"))}, nil, and(data("idc", v4.OpUnique, 0, nil)), []string{"n2"}},
	})
}

func TestMaxPer(t *testing.T) {
	nodes := []*v4.Node{node("n1", text("idc", "a")), node("n2", text("idc", "a")), node("n3", text("idc", "b"))}
	onA := func(i int, status string) *v4.TaskGroup {
		return tg(webApp, i, "n1", status, map[string]string{"idc": "a"}, nil)
	}
	maxper2 := and(data("idc", v4.OpMaxPer, v4.ValueText, "2"))
	runOpCases(t, []opCase{
		{"below limit", nodes, []*v4.TaskGroup{onA(0, v4.StatusRunning)}, maxper2, []string{"n1", "n2", "n3"}},
		{"at limit", nodes, []*v4.TaskGroup{onA(0, v4.StatusRunning), onA(1, v4.StatusStaging)}, maxper2, []string{"n3"}},
		{"failed frees a slot", nodes, []*v4.TaskGroup{onA(0, v4.StatusRunning), onA(1, v4.StatusFailed)}, maxper2, []string{"n1", "n2", "n3"}},
		{"not a number never fits", nodes, nil, and(data("idc", v4.OpMaxPer, v4.ValueText, "x")), nil},
		{"missing attribute", []*v4.Node{node("n1")}, nil, maxper2, nil},
	})
}

func TestCluster(t *testing.T) {
	nodes := []*v4.Node{node("slave3", text("zone", "sz")), node("slave4", text("zone", "sh")), node("slave5")}
	runOpCases(t, []opCase{
		{"hostname in set", nodes, nil, and(data("hostname", v4.OpCluster, v4.ValueSet, []string{"slave3", "slave5"})), []string{"slave3", "slave5"}},
		{"text equal", nodes, nil, and(data("zone", v4.OpCluster, v4.ValueText, "sh")), []string{"slave4"}},
		{"missing attribute fails", nodes, nil, and(data("zone", v4.OpCluster, v4.ValueSet, []string{"sz", "sh"})), []string{"slave3", "slave4"}},
		{"scalar attribute passes", []*v4.Node{node("a", scalar("zone", 1)), node("b", text("zone", "x"))}, nil,
			and(data("zone", v4.OpCluster, v4.ValueSet, []string{"y"})), []string{"a"}},
		{"set attribute passes", []*v4.Node{node("a", setAttr("zone", "x", "y")), node("b", text("zone", "x"))}, nil,
			and(data("zone", v4.OpCluster, v4.ValueText, "y")), []string{"a"}},
		{"scalar constraint type passes", nodes, nil, and(data("zone", v4.OpCluster, v4.ValueScalar, 1.0)), []string{"slave3", "slave4"}},
		{"node label as text", []*v4.Node{node("a", func(n *v4.Node) { n.Metadata.Labels = map[string]string{"tier": "gold"} }), node("b")}, nil,
			and(data("tier", v4.OpCluster, v4.ValueText, "gold")), []string{"a"}},
	})
}

func TestLikeUnlike(t *testing.T) {
	slaves := []*v4.Node{node("slave1"), node("slave3"), node("slave6"), node("myslave10")}
	runOpCases(t, []opCase{
		{"glob range", slaves, nil, and(data("hostname", v4.OpLike, v4.ValueText, "slave[3-5]")), []string{"slave3"}},
		{"anchored: slave1 is not myslave10", slaves, nil, and(data("hostname", v4.OpLike, v4.ValueText, "slave1")), []string{"slave1"}},
		{"regex whole value", slaves, nil, and(data("hostname", v4.OpLike, v4.ValueText, `slave\d`)), []string{"slave1", "slave3", "slave6"}},
		{"glob star", slaves, nil, and(data("hostname", v4.OpLike, v4.ValueText, "*slave1*")), []string{"myslave10", "slave1"}},
		{"set: any item", slaves, nil, and(data("hostname", v4.OpLike, v4.ValueSet, []string{"slave1", "slave6"})), []string{"slave1", "slave6"}},
		{"unlike text", slaves, nil, and(data("hostname", v4.OpUnlike, v4.ValueText, "slave[1-2]")), []string{"myslave10", "slave3", "slave6"}},
		{"unlike set: no item", slaves, nil, and(data("hostname", v4.OpUnlike, v4.ValueSet, []string{"slave1", "my*"})), []string{"slave3", "slave6"}},
		{"non-text attribute passes", []*v4.Node{node("a", scalar("gen", 3)), node("b", text("gen", "x"))}, nil,
			and(data("gen", v4.OpLike, v4.ValueText, "y")), []string{"a"}},
		{"missing attribute fails", []*v4.Node{node("a"), node("b", text("gen", "x"))}, nil,
			and(data("gen", v4.OpUnlike, v4.ValueText, "y")), []string{"b"}},
	})
}

func TestGroupByFeasibility(t *testing.T) {
	nodes := []*v4.Node{node("n1", text("idc", "idc1")), node("n2", text("idc", "idc2")), node("n3", text("idc", "idc3")), node("n4")}
	gb := and(data("idc", v4.OpGroupBy, v4.ValueSet, []string{"idc1", "idc2"}))
	on := func(i int, n, v, status string) *v4.TaskGroup {
		return tg(webApp, i, n, status, map[string]string{"idc": v}, nil)
	}
	runOpCases(t, []opCase{
		{"value must be in the set; missing fails", nodes, nil, gb, []string{"n1", "n2"}},
		// one existing: limit ceil(2/2)=1, idc1 is full.
		{"limit ceil((n+1)/|set|)", nodes, []*v4.TaskGroup{on(0, "n1", "idc1", v4.StatusRunning)}, gb, []string{"n2"}},
		// two existing (one each): limit ceil(3/2)=2, both open.
		{"both open again", nodes, []*v4.TaskGroup{on(0, "n1", "idc1", v4.StatusRunning), on(1, "n2", "idc2", v4.StatusRunning)}, gb, []string{"n1", "n2"}},
		{"failed not counted", nodes, []*v4.TaskGroup{on(0, "n1", "idc1", v4.StatusFailed)}, gb, []string{"n1", "n2"}},
	})
}

func TestGroupBySplitsUnevenCounts(t *testing.T) {
	s := snapshotOf([]*v4.Node{node("n1", text("idc", "idc1")), node("n2", text("idc", "idc1")), node("n3", text("idc", "idc2"))})
	res := s.Place(request(webApp, and(data("idc", v4.OpGroupBy, v4.ValueSet, []string{"idc1", "idc2"})), 3), Options{})
	if len(res.Unplaced) > 0 {
		t.Fatal(res.Reason)
	}
	per := map[string]int{}
	for _, p := range res.Placements {
		per[p.Attributes["idc"]]++
	}
	if !(per["idc1"] == 2 && per["idc2"] == 1) && !(per["idc1"] == 1 && per["idc2"] == 2) {
		t.Errorf("3 instances over 2 values: want a 2/1 split, got %v", per)
	}
	// GROUPBY inside an OR takes the scanning path and must keep the same limit.
	s2 := snapshotOf([]*v4.Node{node("n1", text("idc", "idc1")), node("n2", text("idc", "idc1")), node("n3", text("idc", "idc2"))})
	c := or(data("idc", v4.OpGroupBy, v4.ValueSet, []string{"idc1", "idc2"}), data("hostname", v4.OpCluster, v4.ValueText, "none"))
	res = s2.Place(request(webApp, c, 4), Options{})
	per = map[string]int{}
	for _, p := range res.Placements {
		per[p.Attributes["idc"]]++
	}
	if per["idc1"] != 2 || per["idc2"] != 2 {
		t.Errorf("4 instances over 2 values through the scan path: want 2/2, got %v (%v)", per, res.Reason)
	}
}

func TestExclude(t *testing.T) {
	nodes := []*v4.Node{node("n1"), node("n2"), node("n3")}
	ex := and(data("label", v4.OpExclude, v4.ValueSet, []string{"processname:gamesvr", "processname:dbsvr"}))
	db := map[string]string{"processname": "dbsvr"}
	runOpCases(t, []opCase{
		{"other application, other namespace", nodes, []*v4.TaskGroup{tg(otherApp, 0, "n1", v4.StatusRunning, nil, db)}, ex, []string{"n2", "n3"}},
		{"any status excludes", nodes, []*v4.TaskGroup{tg(otherApp, 0, "n2", v4.StatusFailed, nil, db)}, ex, []string{"n1", "n3"}},
		{"the application itself does not", nodes, []*v4.TaskGroup{tg(webApp, 0, "n1", v4.StatusRunning, nil, db)}, ex, []string{"n1", "n2", "n3"}},
		{"other labels do not", nodes, []*v4.TaskGroup{tg(otherApp, 0, "n1", v4.StatusRunning, nil, map[string]string{"processname": "web"})}, ex, []string{"n1", "n2", "n3"}},
	})
}

func TestGreater(t *testing.T) {
	nodes := []*v4.Node{node("a", scalar("cpus", 8)), node("b", scalar("cpus", 4)), node("c", text("cpus", "16")), node("d")}
	runOpCases(t, []opCase{
		{"strictly greater; text and missing fail", nodes, nil, and(data("cpus", v4.OpGreater, v4.ValueScalar, 4.0)), []string{"a"}},
	})
}

func TestTolerationAndNodeChecks(t *testing.T) {
	nodes := []*v4.Node{
		node("plain"), node("gpu", taint("dedicated", "gpu")), node("two", taint("dedicated", "gpu"), taint("disk", "ssd")),
		node("down", func(n *v4.Node) { n.Status.Phase = v4.NodeNotReady }),
		node("off", func(n *v4.Node) { n.Spec.Disabled = true }),
		node("soft", func(n *v4.Node) { n.Spec.Taints = []v4.Taint{{Key: "x", Value: "y", Effect: "PreferNoSchedule"}} }),
	}
	tol := data("dedicated", v4.OpToleration, v4.ValueText, "gpu")
	runOpCases(t, []opCase{
		{"no toleration: untainted only", nodes, nil, nil, []string{"plain", "soft"}},
		{"tolerated taint", nodes, nil, and(tol), []string{"gpu", "plain", "soft"}},
		{"every taint must be tolerated", nodes, nil, and(tol, data("disk", v4.OpToleration, v4.ValueText, "ssd")), []string{"gpu", "plain", "soft", "two"}},
		{"toleration holds inside OR", nodes, nil, or(data("hostname", v4.OpCluster, v4.ValueText, "nothing"), tol), []string{"gpu", "plain", "soft"}},
	})
}

func TestAndOr(t *testing.T) {
	nodes := []*v4.Node{node("a", text("zone", "x"), text("rack", "1")), node("b", text("zone", "y"), text("rack", "1")), node("c", text("zone", "y"), text("rack", "2"))}
	runOpCases(t, []opCase{
		{"OR within an item", nodes, nil, or(data("zone", v4.OpCluster, v4.ValueText, "x"), data("rack", v4.OpCluster, v4.ValueText, "2")), []string{"a", "c"}},
		{"AND across items", nodes, nil, and(data("zone", v4.OpCluster, v4.ValueText, "y"), data("rack", v4.OpCluster, v4.ValueText, "1")), []string{"b"}},
		{"empty constraint", nodes, nil, &v4.Constraint{}, []string{"a", "b", "c"}},
	})
}
