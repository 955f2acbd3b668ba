package cli

import (
	"fmt"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// dependency writes a dependency: its policies, its pods with their reference counts,
// and its template.
func (d *describer) dependency(dep *v4.Dependency) {
	if dep.Status.Message != "" {
		d.kv("Status", "%s", dep.Status.Message)
	}
	d.policies(dep.RestartPolicy, dep.KillPolicy, dep.Constraint)
	d.dependencyPods(dep.Status.Pods)
	d.template(&dep.Spec.Template)
}

// dependencyPods writes one line per shared pod: where, for whom, how many use it and,
// once nobody does, since when.
func (d *describer) dependencyPods(pods []v4.DependencyPod) {
	if len(pods) == 0 {
		d.kv("Pods", "%s (nothing depends on it on any node)", none)
		return
	}
	d.section("Pods", func() {
		rows := make([][]string, 0, len(pods))
		for _, p := range pods {
			scope := "node"
			if p.Scope != "" {
				scope = "namespace " + p.Scope
			}
			lastUsed := "in use"
			if p.RefCount == 0 {
				lastUsed = age(p.LastUsed, d.now) + " ago"
			}
			rows = append(rows, []string{p.Node, scope, orNone(p.TaskGroup), orNone(p.Phase), strconv.Itoa(p.RefCount), lastUsed})
		}
		var b strings.Builder
		_ = writeTable(&b, []string{"NODE", "SHARED BY", "TASK GROUP", "PHASE", "REFCOUNT", "LAST USED"}, rows)
		for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
			d.line(l)
		}
	})
}

// dependencyRefs writes a pod's declared dependencies ("infra/logagent (node)").
func (d *describer) dependencyRefs(refs []v4.DependencyRef) {
	if len(refs) == 0 {
		return
	}
	parts := make([]string, 0, len(refs))
	for _, r := range refs {
		parts = append(parts, fmt.Sprintf("%s/%s (%s)", r.Namespace, r.Name, r.Policy))
	}
	d.kv("Dependencies", "%s", strings.Join(parts, ", "))
}

// dependencyColumns are the columns of `berth get dependencies`.
func dependencyColumns() kindColumns {
	return kindColumns{[]string{"PODS", "REFCOUNT", "TASKS"}, func(o v4.Object) []string {
		dep, _ := o.(*v4.Dependency)
		if dep == nil {
			return []string{"", "", ""}
		}
		running, refs := 0, 0
		for _, p := range dep.Status.Pods {
			if p.Phase == v4.StatusRunning {
				running++
			}
			refs += p.RefCount
		}
		return []string{fmt.Sprintf("%d/%d", running, len(dep.Status.Pods)), strconv.Itoa(refs), taskSummary(&dep.Spec.Template.Spec)}
	}}
}
