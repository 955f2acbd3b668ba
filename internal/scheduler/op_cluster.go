package scheduler

import v4 "github.com/berthhq/berth/api/v4"

// CLUSTER requires the node's value to equal the text or be in the set. As in BCS, a
// node whose attribute is not text, or a constraint that is neither text nor set, passes;
// a node without the attribute does not.
type clusterEntry struct {
	name  string
	any   bool // the constraint's type makes every node with the attribute pass
	set   map[string]struct{}
	items []string
}

func newCluster(d *v4.ConstraintData) entry {
	e := &clusterEntry{name: d.Name, set: map[string]struct{}{}}
	switch {
	case d.Type == v4.ValueText && d.Text != nil:
		e.items = []string{d.Text.Value}
	case d.Type == v4.ValueSet && d.Set != nil:
		e.items = d.Set.Item
	default:
		e.any = true
	}
	for _, it := range e.items {
		e.set[it] = struct{}{}
	}
	return e
}

func (e *clusterEntry) ok(n *nodeState, _ *reqState) bool {
	text, decided, result := textAttr(n, e.name, e.any)
	if decided {
		return result
	}
	_, in := e.set[text]
	return in
}

func (e *clusterEntry) dynamic() bool  { return false }
func (e *clusterEntry) String() string { return e.name + " CLUSTER " + setString(e.items) }

// textAttr applies what CLUSTER, LIKE and UNLIKE share (BCS): a node without the
// attribute fails; a non-text attribute, or a constraint whose type takes no value
// (anyValue), passes. Otherwise decided is false and text is the value to compare.
func textAttr(n *nodeState, name string, anyValue bool) (text string, decided, result bool) {
	v, found := n.attr(name)
	switch {
	case !found:
		return "", true, false
	case anyValue || v.kind != attrText:
		return "", true, true
	}
	return v.text, false, false
}
