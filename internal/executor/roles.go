package executor

import (
	v4 "github.com/berthhq/berth/api/v4"
)

// startOrder is the order a pod's tasks start in (docs/pods.md, "Start and stop"):
// sidecars first, so that a proxy or a log shipper serves the init tasks too (why
// Kubernetes made its sidecars init containers), then the init tasks, each to its end,
// then the main tasks; each group in the spec's order. A pod without roles starts in the
// spec's order, as BCS's executor did.
func startOrder(tasks []taskPlan) []int {
	order := make([]int, 0, len(tasks))
	for _, role := range []string{v4.RoleSidecar, v4.RoleInit, ""} {
		for i := range tasks {
			if tasks[i].role() == role {
				order = append(order, i)
			}
		}
	}
	return order
}

// stopGroups are the groups a pod's started tasks stop in: every task that is not a
// sidecar at once (the main tasks, and an init task still running), then each sidecar
// alone, the last started first.
func (p *podPlan) stopGroups() [][]int {
	var first []int
	var sidecars []int
	for _, i := range p.order {
		if p.tasks[i].role() == v4.RoleSidecar {
			sidecars = append(sidecars, i)
		} else {
			first = append(first, i)
		}
	}
	groups := [][]int{first}
	for j := len(sidecars) - 1; j >= 0; j-- {
		groups = append(groups, []int{sidecars[j]})
	}
	return groups
}

// runs reports whether task i is one that keeps running once the pod runs: every task but
// the init tasks, which have ended by then.
func (p *podPlan) runs(i int) bool { return p.tasks[i].role() != v4.RoleInit }

// finishedInits are the init tasks that ran to success, by index: they have nothing left
// to stop.
func (p *pod) finishedInits() map[int]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[int]bool{}
	for i, t := range p.status.Tasks {
		if t.Role == v4.RoleInit && t.Status == v4.StatusFinish {
			out[i] = true
		}
	}
	return out
}
