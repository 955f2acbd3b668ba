package executor

import (
	"context"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
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

// finishedTasks are the tasks that ended on their own, successfully, while the pod ran
// (init tasks, and main tasks of a pod with roles), by index: they are Finish already,
// have nothing left to stop, and keep how they ended when the pod ends.
func (p *pod) finishedTasks() map[int]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[int]bool{}
	for i, t := range p.status.Tasks {
		if t.Status == v4.StatusFinish {
			out[i] = true
		}
	}
	return out
}

// hasRoles reports whether a task of the pod has a role: BCS's pods have none, and keep
// BCS's ending (any task's exit ends the pod).
func (p *podPlan) hasRoles() bool {
	for i := range p.tasks {
		if p.tasks[i].role() != "" {
			return true
		}
	}
	return false
}

// mainFinished records main task i's clean exit in a pod with roles (docs/pods.md, "Start
// and stop"): it is Finish and the pod runs on while other main tasks do. It reports false
// for any other end, which ends the pod as before.
func (p *pod) mainFinished(i int, st driver.State, done map[int]bool) bool {
	if !p.plan.cleanMainEnd(i, st) {
		return false
	}
	done[i] = true
	info := p.decorate(i, st.Info)
	p.update(func(s *v4.TaskGroupStatus) {
		s.Tasks[i].Status, s.Tasks[i].Info, s.Tasks[i].Message = v4.StatusFinish, info, "completed"
	})
	return true
}

// allMainsFinished returns how the pod ends once every main task exited 0, nil while one
// runs: its sidecars are stopped (their hooks run) and the pod is Finish, whatever the
// sidecars' exits.
func (p *pod) allMainsFinished(done map[int]bool) func(context.Context) {
	for i := range p.plan.tasks {
		if p.plan.tasks[i].role() == "" && !done[i] {
			return nil
		}
	}
	return func(ctx context.Context) {
		if m := p.plan.main; p.plan.step != nil && !p.collectStep(ctx, m, p.snapshot().Tasks[m].Info.ExitCode) {
			return // the executor closed: the next agent collects
		}
		p.e.log.Info("main tasks completed: stopping the sidecars", "namespace", p.ns, "name", p.name)
		infos := p.stopAll(ctx, p.plan.grace, -1, true)
		p.endAll(v4.StatusFinish, "main tasks completed", infos, nil, nil)
	}
}

// cleanMainEnd reports whether st is main task i's exit 0 in a pod with roles.
func (p *podPlan) cleanMainEnd(i int, st driver.State) bool {
	return p.hasRoles() && p.tasks[i].role() == "" && st.ID != "" && !st.Running && !st.Info.OOMKilled && st.Info.ExitCode == 0
}
