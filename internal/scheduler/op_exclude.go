package scheduler

import (
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// EXCLUDE keeps an application off nodes where any other application with one of the
// given "k:v" labels has a task group, in any status, across all namespaces.
type excludeEntry struct {
	self   AppKey
	labels []string
}

func newExclude(d *v4.ConstraintData, self AppKey) entry {
	e := &excludeEntry{self: self}
	if d.Set != nil {
		for _, it := range d.Set.Item {
			if k, v, ok := strings.Cut(it, ":"); ok {
				e.labels = append(e.labels, k+":"+v)
			}
		}
	}
	return e
}

func (e *excludeEntry) ok(n *nodeState, _ *reqState) bool {
	for _, kv := range e.labels {
		for app := range n.labelApps[kv] {
			if app != e.self {
				return false
			}
		}
	}
	return true
}

// EXCLUDE only looks at other applications, which this request does not change.
func (e *excludeEntry) dynamic() bool  { return false }
func (e *excludeEntry) String() string { return "label EXCLUDE " + setString(e.labels) }
