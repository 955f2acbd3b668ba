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
			g.call(fmt.Sprintf("%s[%d][%d]", p, gi, si), &group[si], sc.with(false, inSet(visible)))
		}
		visible = cloneSet(visible)
		for _, s := range group {
			visible[s.Name] = true
		}
	}
	sc.sees = inSet(visible) // the template's outputs see every step
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
	index := make(map[string]int, len(tasks))
	for i, t := range tasks {
		index[t.Name] = i
	}
	anc := ancestorSets(tasks, index, deps)
	for i := range tasks {
		sees := func(name string) bool { j, ok := index[name]; return ok && anc[i].has(j) }
		g.call(fmt.Sprintf("%s.tasks[%d]", p, i), &tasks[i].WfStep, sc.with(false, sees))
	}
	sc.sees = func(name string) bool { _, ok := index[name]; return ok } // the outputs see every task
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
	seen := make(map[string]bool, len(out))
	for _, name := range out {
		switch {
		case name == t.Name:
			g.errs.add(field, "task %q depends on itself", name)
		case names[name] == nil:
			g.errs.add(field, "unknown task %q", truncate(name, 80))
		case !seen[name]:
			seen[name] = true
			known = append(known, name)
		}
	}
	return known
}

// bitset is a set of task indexes.
type bitset []uint64

func (b bitset) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }

// ancestorSets gives each task the tasks it depends on, directly or not (deps has no
// cycle): in dependency order, a task's set is its dependencies and their sets. Sets of
// bits keep a dense graph of a thousand tasks (half a million edges fit in a request)
// to a few million word operations.
func ancestorSets(tasks []WfDAGTask, index map[string]int, deps map[string][]string) []bitset {
	words := (len(tasks) + 63) / 64
	sets := make([]bitset, len(tasks))
	for _, i := range topoOrder(tasks, index, deps) {
		set := make(bitset, words)
		for _, d := range deps[tasks[i].Name] {
			j := index[d]
			set[j/64] |= 1 << (j % 64)
			for w := range sets[j] { // nil only for a duplicate name, refused already
				set[w] |= sets[j][w]
			}
		}
		sets[i] = set
	}
	for i := range sets {
		if sets[i] == nil {
			sets[i] = make(bitset, words)
		}
	}
	return sets
}

// topoOrder lists the tasks' indexes, each after those it depends on.
func topoOrder(tasks []WfDAGTask, index map[string]int, deps map[string][]string) []int {
	return TopoOrder(len(tasks), func(i int) []int {
		var out []int
		for _, d := range deps[tasks[i].Name] {
			if j, ok := index[d]; ok {
				out = append(out, j)
			}
		}
		return out
	})
}

// TopoOrder lists the nodes 0..n-1, each after the nodes deps(i) names (Kahn's
// algorithm: linear in nodes and edges; deps is called once per node). A result shorter
// than n means the nodes left out lie on a cycle or after one. The workflow engine
// orders a DAG's tasks with it too.
func TopoOrder(n int, deps func(i int) []int) []int {
	pending := make([]int, n) // dependencies not yet listed
	dependents := make([][]int, n)
	for i := range n {
		for _, j := range deps(i) {
			pending[i]++
			dependents[j] = append(dependents[j], i)
		}
	}
	order := make([]int, 0, n)
	for i := range n {
		if pending[i] == 0 {
			order = append(order, i)
		}
	}
	for k := 0; k < len(order); k++ {
		for _, i := range dependents[order[k]] {
			if pending[i]--; pending[i] == 0 {
				order = append(order, i)
			}
		}
	}
	return order
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
