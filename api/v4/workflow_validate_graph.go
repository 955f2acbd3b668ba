package v4

import (
	"fmt"
	"slices"
	"strings"

	"github.com/berthhq/berth/api/v4/expr"
)

// steps checks a steps template: groups run in order, so a step sees the outputs of the
// steps of earlier groups only.
func (g *wfGraph) steps(p string, t *WfTemplate, sc *refScope) {
	total := 0
	for gi, group := range t.Steps {
		if len(group) == 0 {
			g.errs.add(fmt.Sprintf("%s[%d]", p, gi), "required: at least one step in a group")
		}
		total += len(group)
	}
	if total > MaxWfStepsPerTmpl {
		g.errs.add(p, "must have at most %d steps in all, got %d", MaxWfStepsPerTmpl, total)
		return
	}
	sc.prefix, sc.names = "steps", map[string]*WfStep{}
	for gi, group := range t.Steps {
		for si := range group {
			s := &group[si]
			np := fmt.Sprintf("%s[%d][%d].name", p, gi, si)
			if checkWfName(np, s.Name, g.errs) {
				if _, dup := sc.names[s.Name]; dup {
					g.errs.add(np, "duplicate step %q", s.Name)
				}
				sc.names[s.Name] = s
			}
		}
	}
	visible := map[string]bool{}
	for gi, group := range t.Steps {
		for si := range group {
			g.call(fmt.Sprintf("%s[%d][%d]", p, gi, si), &group[si], sc.with(false, visible))
		}
		visible = cloneSet(visible)
		for _, s := range group {
			visible[s.Name] = true
		}
	}
	sc.visible = visible // the template's outputs see every step
}

// dag checks a dag template: dependencies name tasks of the dag, form no cycle, and a
// task sees the outputs of the tasks it depends on, directly or not.
func (g *wfGraph) dag(p string, t *WfTemplate, sc *refScope) {
	tasks := t.DAG.Tasks
	switch {
	case len(tasks) == 0:
		g.errs.add(p+".tasks", "required: at least one task")
		return
	case len(tasks) > MaxWfStepsPerTmpl:
		g.errs.add(p+".tasks", "must have at most %d tasks, got %d", MaxWfStepsPerTmpl, len(tasks))
		return
	}
	sc.prefix, sc.names = "tasks", map[string]*WfStep{}
	for i := range tasks {
		np := fmt.Sprintf("%s.tasks[%d].name", p, i)
		if checkWfName(np, tasks[i].Name, g.errs) {
			if _, dup := sc.names[tasks[i].Name]; dup {
				g.errs.add(np, "duplicate task %q", tasks[i].Name)
			}
			sc.names[tasks[i].Name] = &tasks[i].WfStep
		}
	}
	deps := make(map[string][]string, len(tasks))
	for i := range tasks {
		deps[tasks[i].Name] = g.taskDeps(fmt.Sprintf("%s.tasks[%d]", p, i), &tasks[i], sc.names)
	}
	if cyc := findCycle(taskNames(tasks), deps); cyc != nil {
		i := slices.IndexFunc(tasks, func(t WfDAGTask) bool { return t.Name == cyc[0] })
		g.errs.add(fmt.Sprintf("%s.tasks[%d]", p, i), "dependency cycle: %s", strings.Join(cyc, " → "))
		return
	}
	all := map[string]bool{}
	for i := range tasks {
		g.call(fmt.Sprintf("%s.tasks[%d]", p, i), &tasks[i].WfStep, sc.with(false, ancestors(tasks[i].Name, deps)))
		all[tasks[i].Name] = true
	}
	sc.visible = all
}

func taskNames(tasks []WfDAGTask) []string {
	out := make([]string, len(tasks))
	for i, t := range tasks {
		out[i] = t.Name
	}
	return out
}

// taskDeps checks a task's dependencies or depends and returns the tasks they name.
func (g *wfGraph) taskDeps(p string, t *WfDAGTask, names map[string]*WfStep) []string {
	if len(t.Dependencies) > 0 && t.Depends != "" {
		g.errs.add(p, "must set dependencies or depends, not both")
		return nil
	}
	var out []string
	field := p + ".dependencies"
	if t.Depends != "" {
		field = p + ".depends"
		if len(t.Depends) > maxWfExprLen {
			g.errs.add(field, "must be at most %d bytes", maxWfExprLen)
			return nil
		}
		d, err := expr.ParseDepends(t.Depends)
		if err != nil {
			g.errs.add(field, "does not parse: %v", err)
			return nil
		}
		out = d.Tasks()
	} else {
		out = t.Dependencies
	}
	known := out[:0:0]
	for _, name := range out {
		switch {
		case name == t.Name:
			g.errs.add(field, "task %q depends on itself", name)
		case names[name] == nil:
			g.errs.add(field, "unknown task %q", truncate(name, 80))
		case !slices.Contains(known, name):
			known = append(known, name)
		}
	}
	return known
}

// ancestors is every task name depends on, directly or not (deps has no cycle).
func ancestors(name string, deps map[string][]string) map[string]bool {
	seen := map[string]bool{}
	stack := slices.Clone(deps[name])
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !seen[n] {
			seen[n] = true
			stack = append(stack, deps[n]...)
		}
	}
	return seen
}

// findCycle returns a cycle of the graph ("a", "b", "a"), or nil. It walks without
// recursion: a hostile chain of a thousand tasks must not grow the stack.
func findCycle(nodes []string, edges map[string][]string) []string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	for _, start := range nodes {
		if color[start] != white {
			continue
		}
		type frame struct {
			n string
			i int
		}
		path := []frame{{start, 0}}
		color[start] = grey
		for len(path) > 0 {
			top := &path[len(path)-1]
			if top.i == len(edges[top.n]) {
				color[top.n] = black
				path = path[:len(path)-1]
				continue
			}
			next := edges[top.n][top.i]
			top.i++
			switch color[next] {
			case grey:
				return cycleFrom(path, next, func(f frame) string { return f.n })
			case white:
				color[next] = grey
				path = append(path, frame{next, 0})
			}
		}
	}
	return nil
}

func cycleFrom[F any](path []F, start string, name func(F) string) []string {
	i := slices.IndexFunc(path, func(f F) bool { return name(f) == start })
	out := make([]string, 0, len(path)-i+1)
	for _, f := range path[i:] {
		out = append(out, name(f))
	}
	return append(out, start)
}
