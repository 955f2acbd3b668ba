package scheduler

import (
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// UNIQUE and MAXPER count the application's task groups (not Finish or Failed) by the
// attribute value recorded when each was placed: UNIQUE fits while no task group has the
// node's value, MAXPER while fewer than the limit have it. A node without the attribute
// does not fit.
type maxPerEntry struct {
	name   string
	limit  int
	unique bool
}

func newMaxPer(d *v4.ConstraintData) entry {
	if d.Type != v4.ValueText || d.Text == nil {
		return never{desc: d.Name + " MAXPER (needs a text limit)"}
	}
	n, err := strconv.Atoi(strings.TrimSpace(d.Text.Value))
	if err != nil || n <= 0 {
		return never{desc: d.Name + " MAXPER " + d.Text.Value + " (not a positive integer)"}
	}
	return &maxPerEntry{name: d.Name, limit: n}
}

func (e *maxPerEntry) ok(n *nodeState, st *reqState) bool {
	v, found := n.attr(e.name)
	if !found {
		return false
	}
	return st.count(e.name, v.key()) < e.limit
}

func (e *maxPerEntry) dynamic() bool { return true }

func (e *maxPerEntry) String() string {
	if e.unique {
		return e.name + " UNIQUE"
	}
	return e.name + " MAXPER " + strconv.Itoa(e.limit)
}
