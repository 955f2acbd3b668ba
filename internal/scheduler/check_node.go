package scheduler

import v4 "github.com/berthhq/berth/api/v4"

// Node-level checks: a node must be ready and enabled, and every NoSchedule taint on it
// must be tolerated by a TOLERATION entry {name: key, text: value} of the constraints.
//
// BCS accepted a node when one of its taints was tolerated; berth requires all of them,
// as Kubernetes does: a second taint would otherwise be silently ignored.

func checkNode(n *nodeState) (ok bool, reason string) {
	switch {
	case n.notReady:
		return false, "node not ready"
	case !n.schedulable:
		return false, "node disabled"
	}
	return true, ""
}

// tolerations are the key=value pairs a request tolerates.
type tolerations map[[2]string]bool

func tolerationsOf(c *v4.Constraint) tolerations {
	t := tolerations{}
	if c == nil {
		return t
	}
	for _, item := range c.IntersectionItem {
		for _, d := range item.UnionData {
			if d.Operate == v4.OpToleration && d.Text != nil {
				t[[2]string{d.Name, d.Text.Value}] = true
			}
		}
	}
	return t
}

// untolerated returns the first NoSchedule taint of n that t does not tolerate, if any.
func (t tolerations) untolerated(n *nodeState) (v4.Taint, bool) {
	return t.first(n.taints)
}

// avoided reports whether n has a PreferNoSchedule taint that t does not tolerate.
func (t tolerations) avoided(n *nodeState) bool {
	_, bad := t.first(n.preferNot)
	return bad
}

func (t tolerations) first(taints []v4.Taint) (v4.Taint, bool) {
	for _, taint := range taints {
		if !t[[2]string{taint.Key, taint.Value}] {
			return taint, true
		}
	}
	return v4.Taint{}, false
}
