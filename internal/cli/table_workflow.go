package cli

import (
	"fmt"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
)

// workflowColumns: the phase, the steps (Pod nodes) finished of those made so far, and
// the entrypoint.
func workflowColumns() kindColumns {
	return kindColumns{[]string{"STATUS", "STEPS", "ENTRYPOINT"}, func(o v4.Object) []string {
		w, _ := o.(*v4.Workflow)
		if w == nil {
			return []string{"", "", ""}
		}
		done, all := 0, 0
		for _, n := range w.Status.Nodes {
			if n.Type != v4.WfNodePod {
				continue
			}
			all++
			if v4.WfPhaseFinished(n.Phase) {
				done++
			}
		}
		return []string{orNone(w.Status.Phase), fmt.Sprintf("%d/%d", done, all), orNone(w.Spec.Entrypoint)}
	}}
}

func workflowTemplateColumns() kindColumns {
	return kindColumns{[]string{"TEMPLATES", "ENTRYPOINT"}, func(o v4.Object) []string {
		w, _ := o.(*v4.WorkflowTemplate)
		if w == nil {
			return []string{"", ""}
		}
		return []string{strconv.Itoa(len(w.Spec.Templates)), orNone(w.Spec.Entrypoint)}
	}}
}
