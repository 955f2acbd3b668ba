package scheduler

import (
	"fmt"
	"slices"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// nodeOpt changes a test node.
type nodeOpt func(*v4.Node)

func node(name string, opts ...nodeOpt) *v4.Node {
	n := &v4.Node{
		Metadata: v4.ObjectMeta{Name: name},
		Spec: v4.NodeSpec{
			Hostname:    name,
			Allocatable: v4.NodeResources{CPU: 8, MemoryMB: 16000, DiskMB: 100000},
			Attributes:  v4.NodeAttributes{Text: map[string]string{}},
		},
		Status: v4.NodeStatus{Phase: v4.NodeReady},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func text(k, v string) nodeOpt { return func(n *v4.Node) { n.Spec.Attributes.Text[k] = v } }
func scalar(k string, v float64) nodeOpt {
	return func(n *v4.Node) {
		if n.Spec.Attributes.Scalar == nil {
			n.Spec.Attributes.Scalar = map[string]float64{}
		}
		n.Spec.Attributes.Scalar[k] = v
	}
}
func setAttr(k string, v ...string) nodeOpt {
	return func(n *v4.Node) {
		if n.Spec.Attributes.Set == nil {
			n.Spec.Attributes.Set = map[string][]string{}
		}
		n.Spec.Attributes.Set[k] = v
	}
}
func taint(k, v string) nodeOpt {
	return func(n *v4.Node) {
		n.Spec.Taints = append(n.Spec.Taints, v4.Taint{Key: k, Value: v, Effect: v4.TaintNoSchedule})
	}
}
func capacity(cpu, mem, disk float64) nodeOpt {
	return func(n *v4.Node) { n.Spec.Allocatable = v4.NodeResources{CPU: cpu, MemoryMB: mem, DiskMB: disk} }
}
func ranges(rs ...v4.PortRange) nodeOpt { return func(n *v4.Node) { n.Spec.PortRanges = rs } }

// tg is an existing task group of app on a node, with its recorded attributes.
func tg(app AppKey, index int, nodeName, status string, attrs map[string]string, labels map[string]string) *v4.TaskGroup {
	return &v4.TaskGroup{
		Metadata: v4.ObjectMeta{Namespace: app.Namespace, Name: fmt.Sprintf("%d.%s.%s.test.1", index, app.Name, app.Namespace)},
		Spec: v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: app.Kind, Name: app.Name}, Index: index, Node: nodeName,
			Attributes: attrs, Labels: labels, Resources: v4.NodeResources{CPU: 0.1, MemoryMB: 10}},
		Status: v4.TaskGroupStatus{Phase: status},
	}
}

var webApp = AppKey{Kind: v4.KindApplication, Namespace: "ns-a", Name: "web"}

func snapshotOf(nodes []*v4.Node, tgs ...*v4.TaskGroup) *Snapshot {
	s := NewSnapshot()
	for _, n := range nodes {
		s.SetNode(n)
	}
	for _, t := range tgs {
		s.SetTaskGroup(t)
	}
	return s
}

// data builds one constraint entry.
func data(name, op string, typ int, value any) v4.ConstraintData {
	d := v4.ConstraintData{Name: name, Operate: op, Type: typ}
	switch v := value.(type) {
	case string:
		d.Text = &v4.TextValue{Value: v}
	case []string:
		d.Set = &v4.SetValue{Item: v}
	case float64:
		d.Scalar = &v4.ScalarValue{Value: v}
	}
	return d
}

// and makes a constraint with one item per entry; or puts entries in one item.
func and(ds ...v4.ConstraintData) *v4.Constraint {
	c := &v4.Constraint{}
	for _, d := range ds {
		c.IntersectionItem = append(c.IntersectionItem, v4.ConstraintItem{UnionData: []v4.ConstraintData{d}})
	}
	return c
}

func or(ds ...v4.ConstraintData) *v4.Constraint {
	return &v4.Constraint{IntersectionItem: []v4.ConstraintItem{{UnionData: ds}}}
}

func request(app AppKey, c *v4.Constraint, instances int) *Request {
	idx := make([]int, instances)
	for i := range idx {
		idx[i] = i
	}
	return &Request{App: app, Constraint: c, Indexes: idx, Resources: v4.NodeResources{CPU: 1, MemoryMB: 100}}
}

// feasible lists the nodes where one more instance of req could go now, by name.
func feasible(s *Snapshot, req *Request) []string {
	st := s.compile(req, Options{})
	var out []string
	for _, n := range s.sortedNodes() {
		if st.firstFailure(n) == "" {
			out = append(out, n.name)
		}
	}
	if len(st.app.tgs) == 0 {
		delete(s.apps, req.App)
	}
	return out
}

func assertNodes(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("feasible nodes = %v, want %v", got, want)
	}
}
