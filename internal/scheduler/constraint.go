package scheduler

import (
	"fmt"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// entry is one compiled unionData element of a constraint.
type entry interface {
	// ok reports whether node n satisfies the entry in the request's current state.
	ok(n *nodeState, st *reqState) bool
	// dynamic entries depend on what the request itself places (counts); the others are
	// decided once per node and request.
	dynamic() bool
	String() string
}

// item is one intersectionItem: satisfied when any of its entries is.
type item struct {
	entries []entry
	dynamic bool
	// groupBy is set when the item is a single GROUPBY entry, which placement handles by
	// spreading over groups; a GROUPBY inside an OR falls back to scanning every node.
	groupBy     *groupByEntry
	nonMonotone bool // contains GROUPBY: a node refused now may fit later
}

func (it *item) ok(n *nodeState, st *reqState) bool {
	for _, e := range it.entries {
		if e.ok(n, st) {
			return true
		}
	}
	return false
}

func (it *item) String() string {
	parts := make([]string, len(it.entries))
	for i, e := range it.entries {
		parts[i] = e.String()
	}
	return strings.Join(parts, " or ")
}

// compileConstraint turns the spec's constraint into items. Entries are validated by
// api/v4; anything unexpected here compiles to an entry that never matches, so a bad
// spec places nothing instead of placing wrongly.
func compileConstraint(c *v4.Constraint, self AppKey) []*item {
	if c == nil {
		return nil
	}
	items := make([]*item, 0, len(c.IntersectionItem))
	for _, ci := range c.IntersectionItem {
		it := &item{}
		for i := range ci.UnionData {
			e := compileEntry(&ci.UnionData[i], self)
			it.entries = append(it.entries, e)
			if e.dynamic() {
				it.dynamic = true
			}
			if g, ok := e.(*groupByEntry); ok {
				it.nonMonotone = true
				if len(ci.UnionData) == 1 {
					it.groupBy = g
				}
			}
		}
		if len(it.entries) > 0 {
			items = append(items, it)
		}
	}
	return items
}

func compileEntry(d *v4.ConstraintData, self AppKey) entry {
	switch d.Operate {
	case v4.OpUnique:
		return &maxPerEntry{name: d.Name, limit: 1, unique: true}
	case v4.OpMaxPer:
		return newMaxPer(d)
	case v4.OpCluster:
		return newCluster(d)
	case v4.OpLike, v4.OpUnlike:
		return newLike(d)
	case v4.OpGroupBy:
		return newGroupBy(d)
	case v4.OpExclude:
		return newExclude(d, self)
	case v4.OpGreater:
		return newGreater(d)
	case v4.OpToleration:
		return tolerationEntry{name: d.Name} // taints are checked per node; here it always holds
	}
	return never{desc: fmt.Sprintf("%s %s (unknown operator)", d.Name, d.Operate)}
}

// recordedNames are the attributes whose node values a task group records: hostname and
// every attribute a constraint compares (not EXCLUDE's "label" or TOLERATION's taint keys).
func recordedNames(c *v4.Constraint) []string {
	names := []string{hostnameAttr}
	if c == nil {
		return names
	}
	for _, ci := range c.IntersectionItem {
		for _, d := range ci.UnionData {
			if d.Operate == v4.OpExclude || d.Operate == v4.OpToleration || d.Name == "" {
				continue
			}
			if !contains(names, d.Name) {
				names = append(names, d.Name)
			}
		}
	}
	return names
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// never is an entry that no node satisfies.
type never struct{ desc string }

func (never) ok(*nodeState, *reqState) bool { return false }
func (never) dynamic() bool                 { return false }
func (n never) String() string              { return n.desc }

// tolerationEntry always holds inside the AND/OR evaluation (BCS).
type tolerationEntry struct{ name string }

func (tolerationEntry) ok(*nodeState, *reqState) bool { return true }
func (tolerationEntry) dynamic() bool                 { return false }
func (t tolerationEntry) String() string              { return t.name + " TOLERATION" }

// setString shows a set compactly: [a b c +7].
func setString(items []string) string {
	const show = 5
	if len(items) <= show {
		return "[" + strings.Join(items, " ") + "]"
	}
	return fmt.Sprintf("[%s +%d]", strings.Join(items[:show], " "), len(items)-show)
}
