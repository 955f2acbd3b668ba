package scheduler

import (
	"fmt"
	"math/rand/v2"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// TestPropertyPlacementsAreValidAndComplete places random requests on random clusters and
// checks every placement with an independent, deliberately plain oracle, replaying them in
// order: the node passed every check at that moment, nothing is over-committed (cpu,
// memory, disk, extended, ports), and when instances are left unplaced, no node could
// take one more.
func TestPropertyPlacementsAreValidAndComplete(t *testing.T) {
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 7))
		nodes, tgs := randomCluster(rng)
		req := randomRequest(rng)
		opts := Options{Strategy: []string{Spread, Binpack}[rng.IntN(2)]}
		s := snapshotOf(nodes, tgs...)
		res := s.Place(req, opts)

		o := newOracle(nodes, tgs, req)
		for _, p := range res.Placements {
			if why := o.check(p.Node); why != "" {
				t.Fatalf("seed %d: instance %d placed on %s, which the oracle rejects: %s\nrequest %s", seed, p.Index, p.Node, why, describeReq(req))
			}
			o.place(t, seed, p)
		}
		if len(res.Placements)+len(res.Unplaced) != len(req.Indexes) {
			t.Fatalf("seed %d: %d placed + %d unplaced != %d", seed, len(res.Placements), len(res.Unplaced), len(req.Indexes))
		}
		if len(res.Unplaced) > 0 {
			for _, n := range nodes {
				if o.check(n.Metadata.Name) == "" {
					t.Fatalf("seed %d: %d unplaced (%v) but %s still fits\nrequest %s", seed, len(res.Unplaced), res.Reason, n.Metadata.Name, describeReq(req))
				}
			}
		}
	}
}

func randomCluster(rng *rand.Rand) ([]*v4.Node, []*v4.TaskGroup) {
	var nodes []*v4.Node
	for i := range 3 + rng.IntN(30) {
		opts := []nodeOpt{
			capacity(float64(1+rng.IntN(8)), float64(500+rng.IntN(8000)), float64(1000+rng.IntN(5000))),
			text("rack", fmt.Sprintf("r%d", rng.IntN(5))),
			scalar("cpus", float64(rng.IntN(16))),
			ranges(v4.PortRange{Begin: 31000, End: 31000 + rng.IntN(4)}),
		}
		if rng.IntN(10) > 0 {
			opts = append(opts, text("idc", []string{"a", "b", "c"}[rng.IntN(3)]))
		}
		if rng.IntN(8) == 0 {
			opts = append(opts, taint("dedicated", "gpu"))
		}
		if rng.IntN(20) == 0 {
			opts = append(opts, func(n *v4.Node) { n.Spec.Disabled = true })
		}
		if rng.IntN(20) == 0 {
			opts = append(opts, func(n *v4.Node) { n.Status.Phase = v4.NodeNotReady })
		}
		if rng.IntN(6) == 0 {
			opts = append(opts, func(n *v4.Node) { n.Spec.Allocatable.Extended = map[string]float64{"gpu": float64(rng.IntN(3))} })
		}
		nodes = append(nodes, node(fmt.Sprintf("n%02d", i), opts...))
	}
	var tgs []*v4.TaskGroup
	statuses := []string{v4.StatusRunning, v4.StatusLost, v4.StatusFailed, v4.StatusFinish, v4.StatusKilled, v4.StatusStaging}
	for i := range rng.IntN(12) {
		n := nodes[rng.IntN(len(nodes))]
		app := webApp
		var labels map[string]string
		if rng.IntN(2) == 0 {
			app = otherApp
			labels = map[string]string{"role": []string{"db", "cache"}[rng.IntN(2)]}
		}
		attrs := map[string]string{"hostname": n.Metadata.Name, "rack": n.Spec.Attributes.Text["rack"]}
		if idc, ok := n.Spec.Attributes.Text["idc"]; ok {
			attrs["idc"] = idc
		}
		t := tg(app, 100+i, n.Metadata.Name, statuses[rng.IntN(len(statuses))], attrs, labels)
		t.Spec.Resources = v4.NodeResources{CPU: 0.5, MemoryMB: 200, DiskMB: 100}
		if rng.IntN(3) == 0 {
			t.Spec.Ports = []v4.AllocatedPort{{Name: "p", HostPort: 31000 + rng.IntN(3)}}
		}
		tgs = append(tgs, t)
	}
	return nodes, tgs
}

func randomEntry(rng *rand.Rand) v4.ConstraintData {
	switch rng.IntN(10) {
	case 0:
		return data("hostname", v4.OpUnique, 0, nil)
	case 1:
		return data("idc", v4.OpUnique, 0, nil)
	case 2:
		return data("idc", v4.OpMaxPer, v4.ValueText, fmt.Sprint(1+rng.IntN(3)))
	case 3:
		return data("rack", v4.OpCluster, v4.ValueSet, []string{"r0", "r1", "r2"}[:1+rng.IntN(3)])
	case 4:
		return data("hostname", v4.OpLike, v4.ValueText, []string{"n0*", "n1[0-5]", `n\d2`}[rng.IntN(3)])
	case 5:
		return data("hostname", v4.OpUnlike, v4.ValueSet, []string{"n0?", "n2*"})
	case 6:
		return data("idc", v4.OpGroupBy, v4.ValueSet, []string{"a", "b", "c"}[:2+rng.IntN(2)])
	case 7:
		return data("label", v4.OpExclude, v4.ValueSet, []string{"role:db"})
	case 8:
		return data("cpus", v4.OpGreater, v4.ValueScalar, float64(rng.IntN(8)))
	}
	return data("dedicated", v4.OpToleration, v4.ValueText, "gpu")
}

func randomRequest(rng *rand.Rand) *Request {
	c := &v4.Constraint{}
	for range rng.IntN(4) {
		item := v4.ConstraintItem{UnionData: []v4.ConstraintData{randomEntry(rng)}}
		if rng.IntN(4) == 0 {
			item.UnionData = append(item.UnionData, randomEntry(rng))
		}
		c.IntersectionItem = append(c.IntersectionItem, item)
	}
	req := request(webApp, c, 1+rng.IntN(20))
	req.Resources = v4.NodeResources{CPU: 0.1 + rng.Float64()*2, MemoryMB: float64(50 + rng.IntN(2000)), DiskMB: float64(rng.IntN(500))}
	if rng.IntN(6) == 0 {
		req.Resources.Extended = map[string]float64{"gpu": 1}
	}
	if rng.IntN(4) == 0 {
		req.FixedPorts = []v4.AllocatedPort{{Name: "fixed", HostPort: 31000 + rng.IntN(3)}}
	}
	for i := range rng.IntN(3) {
		req.RandomPorts = append(req.RandomPorts, v4.AllocatedPort{Name: fmt.Sprintf("r%d", i)})
	}
	return req
}

func describeReq(r *Request) string {
	var items []string
	for _, it := range r.Constraint.IntersectionItem {
		var es []string
		for _, d := range it.UnionData {
			es = append(es, fmt.Sprintf("%s %s %v%v%v", d.Name, d.Operate, d.Text, d.Set, d.Scalar))
		}
		items = append(items, strings.Join(es, " | "))
	}
	return fmt.Sprintf("%d instances, %+v, fixed %v, random %d, constraint [%s]", len(r.Indexes), r.Resources, r.FixedPorts, len(r.RandomPorts), strings.Join(items, " & "))
}

// oracle re-implements the placement rules as plainly as possible.
type oracle struct {
	req    *Request
	nodes  map[string]*v4.Node
	used   map[string]*v4.NodeResources
	ports  map[string]map[int]bool
	counts map[string]map[string]int // attribute -> value -> task groups of the app
	total  int
	labels map[string]map[string]bool // node -> "k:v" of other applications' task groups
}

func newOracle(nodes []*v4.Node, tgs []*v4.TaskGroup, req *Request) *oracle {
	o := &oracle{req: req, nodes: map[string]*v4.Node{}, used: map[string]*v4.NodeResources{}, ports: map[string]map[int]bool{},
		counts: map[string]map[string]int{}, labels: map[string]map[string]bool{}}
	for _, n := range nodes {
		o.nodes[n.Metadata.Name] = n
		o.used[n.Metadata.Name] = &v4.NodeResources{Extended: map[string]float64{}}
		o.ports[n.Metadata.Name] = map[int]bool{}
		o.labels[n.Metadata.Name] = map[string]bool{}
	}
	for _, t := range tgs {
		n := t.Spec.Node
		if t.Spec.Owner.Name != req.App.Name {
			for k, v := range t.Spec.Labels {
				o.labels[n][k+":"+v] = true
			}
		}
		st := t.Status.Phase
		if st != v4.StatusFinish && st != v4.StatusFailed && st != v4.StatusKilled && st != v4.StatusError {
			o.use(n, t.Spec.Resources)
			for _, p := range t.Spec.Ports {
				o.ports[n][p.HostPort] = true
			}
		}
		if t.Spec.Owner.Name == req.App.Name && st != v4.StatusFinish && st != v4.StatusFailed {
			o.record(t.Spec.Attributes)
		}
	}
	return o
}

func (o *oracle) use(node string, r v4.NodeResources) {
	u := o.used[node]
	u.CPU += r.CPU
	u.MemoryMB += r.MemoryMB
	u.DiskMB += r.DiskMB
	for k, v := range r.Extended {
		u.Extended[k] += v
	}
}

func (o *oracle) record(attrs map[string]string) {
	o.total++
	for k, v := range attrs {
		if o.counts[k] == nil {
			o.counts[k] = map[string]int{}
		}
		o.counts[k][v]++
	}
}

// value returns the attribute as the counting key, its kind ("text", "scalar") and presence.
func (o *oracle) value(n *v4.Node, name string) (string, string, float64, bool) {
	if name == "hostname" {
		return n.Spec.Hostname, "text", 0, true
	}
	if v, ok := n.Spec.Attributes.Text[name]; ok {
		return v, "text", 0, true
	}
	if v, ok := n.Spec.Attributes.Scalar[name]; ok {
		return fmt.Sprint(v), "scalar", v, true
	}
	return "", "", 0, false
}

func (o *oracle) entryOK(n *v4.Node, d v4.ConstraintData) bool {
	v, kind, num, ok := o.value(n, d.Name)
	switch d.Operate {
	case v4.OpToleration:
		return true
	case v4.OpExclude:
		for _, it := range d.Set.Item {
			if o.labels[n.Metadata.Name][it] {
				return false
			}
		}
		return true
	}
	if !ok {
		return false
	}
	switch d.Operate {
	case v4.OpUnique:
		return o.counts[d.Name][v] == 0
	case v4.OpMaxPer:
		var limit int
		fmt.Sscan(d.Text.Value, &limit)
		return o.counts[d.Name][v] < limit
	case v4.OpCluster:
		return kind != "text" || slices.Contains(d.Set.Item, v)
	case v4.OpLike, v4.OpUnlike:
		if kind != "text" {
			return true
		}
		var pats []string
		if d.Set != nil {
			pats = d.Set.Item
		} else {
			pats = []string{d.Text.Value}
		}
		matched := false
		for _, p := range pats {
			g, _ := path.Match(p, v)
			r, _ := regexp.MatchString("^(?:"+p+")$", v)
			matched = matched || g || r
		}
		return matched == (d.Operate == v4.OpLike)
	case v4.OpGroupBy:
		k := len(d.Set.Item)
		return slices.Contains(d.Set.Item, v) && o.counts[d.Name][v] < (o.total+1+k-1)/k
	case v4.OpGreater:
		return kind == "scalar" && num > d.Scalar.Value
	}
	return false
}

// check returns why one more instance cannot go on node name now ("" when it can).
func (o *oracle) check(name string) string {
	n := o.nodes[name]
	if n.Status.Phase != v4.NodeReady || n.Spec.Disabled {
		return "node not ready or disabled"
	}
	for _, t := range n.Spec.Taints {
		tolerated := false
		for _, it := range o.req.Constraint.IntersectionItem {
			for _, d := range it.UnionData {
				tolerated = tolerated || (d.Operate == v4.OpToleration && d.Name == t.Key && d.Text.Value == t.Value)
			}
		}
		if !tolerated {
			return "taint"
		}
	}
	for i, it := range o.req.Constraint.IntersectionItem {
		ok := false
		for _, d := range it.UnionData {
			ok = ok || o.entryOK(n, d)
		}
		if !ok {
			return fmt.Sprintf("constraint item %d", i)
		}
	}
	u, a, need := o.used[name], n.Spec.Allocatable, o.req.Resources
	if u.CPU+need.CPU+0.01 > a.CPU+1e-9 || u.MemoryMB+need.MemoryMB+64 > a.MemoryMB+1e-9 || u.DiskMB+need.DiskMB+64 > a.DiskMB+1e-9 {
		return "resources"
	}
	for k, v := range need.Extended {
		if u.Extended[k]+v > a.Extended[k]+1e-9 {
			return "extended " + k
		}
	}
	for _, p := range o.req.FixedPorts {
		if o.ports[name][p.HostPort] {
			return "fixed port"
		}
	}
	free := 0
	for _, r := range n.Spec.PortRanges {
		for p := r.Begin; p <= r.End; p++ {
			if !o.ports[name][p] && !slices.ContainsFunc(o.req.FixedPorts, func(f v4.AllocatedPort) bool { return f.HostPort == p }) {
				free++
			}
		}
	}
	if free < len(o.req.RandomPorts) {
		return "random ports"
	}
	return ""
}

// place applies a placement to the oracle's state, checking its ports and attributes.
func (o *oracle) place(t *testing.T, seed uint64, p Placement) {
	t.Helper()
	n := o.nodes[p.Node]
	for _, port := range p.Ports {
		inRange := slices.ContainsFunc(n.Spec.PortRanges, func(r v4.PortRange) bool { return port.HostPort >= r.Begin && port.HostPort <= r.End })
		fixed := slices.ContainsFunc(o.req.FixedPorts, func(f v4.AllocatedPort) bool { return f == port })
		if o.ports[p.Node][port.HostPort] || (!inRange && !fixed) {
			t.Fatalf("seed %d: port %d on %s is taken or outside its ranges", seed, port.HostPort, p.Node)
		}
		o.ports[p.Node][port.HostPort] = true
	}
	if len(p.Ports) != len(o.req.FixedPorts)+len(o.req.RandomPorts) {
		t.Fatalf("seed %d: %d ports allocated, want %d", seed, len(p.Ports), len(o.req.FixedPorts)+len(o.req.RandomPorts))
	}
	for name, v := range p.Attributes {
		if got, _, _, _ := o.value(n, name); got != v {
			t.Fatalf("seed %d: recorded %s=%q, node has %q", seed, name, v, got)
		}
	}
	need := o.req.Resources
	need.CPU += 0.01
	need.MemoryMB += 64
	need.DiskMB += 64
	o.use(p.Node, need)
	o.record(p.Attributes)
}
