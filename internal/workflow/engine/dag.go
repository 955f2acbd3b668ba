package engine

import (
	"fmt"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/api/v4/expr"
)

// dag runs a dag template: each task once every task its dependencies or depends names
// has finished and the expression holds (else the task is Omitted). It walks the tasks
// in dependency order, so one pass settles a chain of omissions.
func (e *engine) dag(n v4.WfNodeStatus, c call, sc *scope) v4.WfNodeStatus {
	n.Phase = v4.WfRunning
	e.put(n)
	tasks := c.tmpl.DAG.Tasks
	deps, order, err := dagOrder(tasks)
	if err != nil {
		return e.end(n, v4.WfError, err.Error())
	}
	lim := e.limiterFor(n, c)
	finished := map[string]v4.WfNodeStatus{}
	ran := map[string]bool{} // tasks that started (not omitted): their dependencies' failures are handled
	for _, i := range order {
		t := &tasks[i]
		names := depTasks(deps[i])
		if !allFinished(names, finished) {
			continue
		}
		path := n.Name + "." + t.Name
		ok, err := true, error(nil)
		if deps[i] != nil {
			ok, err = deps[i].Eval(func(name string) (expr.TaskState, bool) {
				s, ok := finished[name]
				return e.taskState(s), ok
			})
		}
		var child v4.WfNodeStatus
		switch {
		case err != nil:
			child = e.errorNode(path, n.ID, "depends: "+err.Error())
		case !ok:
			child = e.omit(path, n.ID, deps[i].String())
		default:
			child = e.callStep(stepCall{path: path, step: &t.WfStep, scope: sc, boundary: n.ID, depth: c.depth + 1, limit: lim, lib: c.lib})
			for _, d := range names {
				ran[d] = true
			}
		}
		e.link(n.ID, child)
		if v4.WfPhaseFinished(child.Phase) {
			finished[t.Name] = child
			vars := map[string]string{}
			childVars(vars, "tasks", t.Name, child, e.nodes)
			sc = sc.withMap(vars)
		}
	}
	if len(finished) < len(tasks) {
		return e.nodes[n.ID]
	}
	// A failed task fails the dag unless a task that depends on it ran anyway (its
	// depends handled the failure) or its continueOn allows it.
	var failed []string
	for i := range tasks {
		t := &tasks[i]
		if s := finished[t.Name]; failedPhase(s.Phase) && !ran[t.Name] && !continues(&t.WfStep, s.Phase) {
			failed = append(failed, fmt.Sprintf("task %q %s", t.Name, s.Phase))
		}
	}
	if len(failed) > 0 {
		return e.end(e.nodes[n.ID], v4.WfFailed, strings.Join(failed, "; "))
	}
	return e.endWithOutputs(e.nodes[n.ID], c.tmpl, sc)
}

// dagOrder parses each task's dependencies ("A && B" for a list) and returns the tasks'
// indexes in an order where each comes after those it names.
func dagOrder(tasks []v4.WfDAGTask) ([]*expr.Depends, []int, error) {
	deps := make([]*expr.Depends, len(tasks))
	index := make(map[string]int, len(tasks))
	for i, t := range tasks {
		index[t.Name] = i
		src := t.Depends
		if src == "" && len(t.Dependencies) > 0 {
			src = strings.Join(t.Dependencies, " && ")
		}
		if src == "" {
			continue // no dependencies
		}
		d, err := expr.ParseDepends(src)
		if err != nil {
			return nil, nil, fmt.Errorf("task %q: depends: %w", t.Name, err)
		}
		deps[i] = d
	}
	depIdx := make([][]int, len(tasks))
	for i := range tasks {
		for _, name := range depTasks(deps[i]) {
			j, ok := index[name]
			if !ok {
				return nil, nil, fmt.Errorf("task %q: unknown task %q", tasks[i].Name, name)
			}
			depIdx[i] = append(depIdx[i], j)
		}
	}
	order := v4.TopoOrder(len(tasks), func(i int) []int { return depIdx[i] })
	if len(order) < len(tasks) {
		return nil, nil, fmt.Errorf("the dag's dependencies form a cycle")
	}
	return deps, order, nil
}

// depTasks are the tasks a dependency expression names (none when there is none).
func depTasks(d *expr.Depends) []string {
	if d == nil {
		return nil
	}
	return d.Tasks()
}

func allFinished(names []string, finished map[string]v4.WfNodeStatus) bool {
	for _, name := range names {
		if _, ok := finished[name]; !ok {
			return false
		}
	}
	return true
}

// omit records a task whose dependencies do not allow it to run.
func (e *engine) omit(path, boundary, depends string) v4.WfNodeStatus {
	n := e.newNode(path, 0, v4.WfNodeSkipped, "", boundary)
	if !v4.WfPhaseFinished(n.Phase) {
		n.Phase, n.Message, n.FinishedAt = v4.WfOmitted, fmt.Sprintf("omitted: depends %q is false", depends), e.in.Now
		e.put(n)
	}
	return n
}

// taskState is what a depends expression sees of a finished node.
func (e *engine) taskState(n v4.WfNodeStatus) expr.TaskState {
	st := expr.TaskState{Phase: n.Phase}
	if n.Phase == v4.WfError {
		st.Phase = expr.Errored
	}
	if n.Type == v4.WfNodeTaskGroup {
		for _, id := range n.Children {
			c := e.nodes[id]
			st.Items++
			switch {
			case c.Phase == v4.WfSucceeded:
				st.ItemsSuccess++
			case failedPhase(c.Phase):
				st.ItemsFailed++
			}
		}
	}
	return st
}
