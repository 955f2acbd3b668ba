package scheduler

import (
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
)

// GREATER requires a scalar attribute strictly greater than the constraint's scalar.
type greaterEntry struct {
	name  string
	value float64
}

func newGreater(d *v4.ConstraintData) entry {
	if d.Type != v4.ValueScalar || d.Scalar == nil {
		return never{desc: d.Name + " GREATER (needs a scalar)"}
	}
	return &greaterEntry{name: d.Name, value: d.Scalar.Value}
}

func (e *greaterEntry) ok(n *nodeState, _ *reqState) bool {
	v, found := n.attr(e.name)
	return found && v.kind == attrScalar && v.scalar > e.value
}

func (e *greaterEntry) dynamic() bool { return false }
func (e *greaterEntry) String() string {
	return e.name + " GREATER " + strconv.FormatFloat(e.value, 'g', -1, 64)
}
