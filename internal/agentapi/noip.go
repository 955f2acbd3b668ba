package agentapi

import (
	"fmt"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// checkIPs records a NoIP warning when a task group that just became Running has a task
// without an IP address (Lain deployd's "pod IP lost"): its service endpoints and health
// checks cannot reach it. Tasks on network mode none have no IP on purpose.
func (a *API) checkIPs(tg *v4.TaskGroup) {
	missing := tasksWithoutIP(tg.Status.Tasks)
	if len(missing) == 0 {
		return
	}
	rec := v4.Event{Type: v4.EventWarning, Reason: "NoIP", Kind: tg.Spec.Owner.Kind,
		Namespace: tg.Metadata.Namespace, Name: tg.Spec.Owner.Name, TaskGroup: tg.Metadata.Name, Node: tg.Spec.Node,
		Message: fmt.Sprintf("taskgroup %s/%s is Running on node %s without an IP address for task %s",
			tg.Metadata.Namespace, tg.Metadata.Name, tg.Spec.Node, strings.Join(missing, ", "))}
	a.store.QueueEvent(rec)
}

// tasksWithoutIP names the running tasks that report no IP address, except those on
// network mode none.
func tasksWithoutIP(tasks []v4.TaskStatus) []string {
	var out []string
	for _, t := range tasks {
		if t.Status == v4.StatusRunning && t.Info.IPAddress == "" && !strings.EqualFold(t.Info.NetworkMode, "none") {
			out = append(out, t.Name)
		}
	}
	return out
}
