package engine

import v4 "github.com/berthhq/berth/api/v4"

// limiter is a steps or dag template's parallelism: at most max Pod nodes running under
// its node at once (Argo's meaning). Limiters chain to the enclosing templates'.
type limiter struct {
	max, used int
	parent    *limiter
}

// limiterFor makes the limiter of a steps or dag node, counting the Pod nodes already
// running under it.
func (e *engine) limiterFor(n v4.WfNodeStatus, c call) *limiter {
	l := &limiter{max: c.tmpl.Parallelism, parent: c.limit}
	if l.max > 0 {
		l.used = e.activeUnder(n.ID)
	}
	return l
}

// activeUnder counts the unfinished Pod nodes under a node (iteratively; the tree is
// what this engine recorded, at most one visit per node).
func (e *engine) activeUnder(id string) int {
	count, seen := 0, map[string]bool{}
	stack := []string{id}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n, ok := e.nodes[cur]
		if !ok || seen[cur] {
			continue
		}
		seen[cur] = true
		if n.Type == v4.WfNodePod && !v4.WfPhaseFinished(n.Phase) {
			count++
		}
		stack = append(stack, n.Children...)
	}
	return count
}

// mayStart reports whether a new Pod node may start: the workflow is not suspended or
// past its deadline, and neither its parallelism nor an enclosing template's is reached.
func (e *engine) mayStart(l *limiter) bool {
	if e.halted {
		return false
	}
	if m := e.in.MaxStarts; m > 0 && len(e.plan.Start) >= m {
		e.plan.More = true
		return false
	}
	if p := e.in.Spec.Parallelism; p > 0 && e.active >= p {
		return false
	}
	for ; l != nil; l = l.parent {
		if l.max > 0 && l.used >= l.max {
			return false
		}
	}
	return true
}

// take counts a started Pod node against every limit.
func (e *engine) take(l *limiter) {
	e.active++
	for ; l != nil; l = l.parent {
		l.used++
	}
}
