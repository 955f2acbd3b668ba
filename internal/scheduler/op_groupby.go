package scheduler

import v4 "github.com/berthhq/berth/api/v4"

// GROUPBY spreads an application evenly over the values of its set: the node's value
// must be in the set, and fewer than ceil((n+1)/|set|) of the application's task groups
// (not Finish or Failed) may have that value, n being how many it has. Placing three
// instances over two values thus gives 2 and 1.
type groupByEntry struct {
	name  string
	set   map[string]struct{}
	items []string
}

func newGroupBy(d *v4.ConstraintData) entry {
	if d.Type != v4.ValueSet || d.Set == nil || len(d.Set.Item) == 0 {
		return never{desc: d.Name + " GROUPBY (needs a set)"}
	}
	e := &groupByEntry{name: d.Name, set: map[string]struct{}{}}
	for _, it := range d.Set.Item {
		if _, dup := e.set[it]; !dup {
			e.set[it] = struct{}{}
			e.items = append(e.items, it)
		}
	}
	return e
}

// value returns the node's group, if it has one in the set.
func (e *groupByEntry) value(n *nodeState) (string, bool) {
	v, found := n.attr(e.name)
	if !found {
		return "", false
	}
	k := v.key()
	_, in := e.set[k]
	return k, in
}

// limit is how many task groups one value may hold before the next placement.
func (e *groupByEntry) limit(st *reqState) int {
	n := st.total() + 1
	k := len(e.items)
	return (n + k - 1) / k
}

func (e *groupByEntry) ok(n *nodeState, st *reqState) bool {
	k, in := e.value(n)
	return in && st.count(e.name, k) < e.limit(st)
}

func (e *groupByEntry) dynamic() bool  { return true }
func (e *groupByEntry) String() string { return e.name + " GROUPBY " + setString(e.items) }
