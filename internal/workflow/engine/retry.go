package engine

import (
	"slices"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// RetryNodes resets a finished workflow's nodes for a retry (Argo's `retry`): the
// steps that failed or errored are removed, so the next pass starts them again (with
// attempts of their own); so are the nodes a failure decided (omitted and skipped
// ones), a retried template's attempts (it retries from its first again) and the
// workflow's exit handler; the steps, dags and groups above them run again; succeeded
// nodes stay, with their outputs, and are not run again. It returns the nodes to keep,
// changed ones among them, and the IDs removed.
func RetryNodes(workflow string, nodes map[string]v4.WfNodeStatus) (keep map[string]v4.WfNodeStatus, removed []string) {
	drop := map[string]bool{}
	var mark func(id string)
	mark = func(id string) { // a node and what is under it
		n, ok := nodes[id]
		if !ok || drop[id] {
			return
		}
		drop[id] = true
		for _, c := range n.Children {
			mark(c)
		}
	}
	exit := workflow + ".onExit"
	for _, id := range sortedIDs(nodes) {
		n := nodes[id]
		switch {
		case n.Name == exit || strings.HasPrefix(n.Name, exit+"."):
			mark(id)
		case n.Phase == v4.WfOmitted || n.Phase == v4.WfSkipped && n.Type != v4.WfNodeSkipped:
			mark(id)
		case failedPhase(n.Phase) && (n.Type == v4.WfNodePod || n.Type == v4.WfNodeRetry || n.Type == v4.WfNodeSuspend):
			mark(id)
		}
	}
	keep = make(map[string]v4.WfNodeStatus, len(nodes))
	for id, n := range nodes {
		if drop[id] {
			removed = append(removed, id)
			continue
		}
		if slices.ContainsFunc(n.Children, func(c string) bool { return drop[c] }) {
			n.Children = slices.DeleteFunc(slices.Clone(n.Children), func(c string) bool { return drop[c] })
		}
		if failedPhase(n.Phase) { // a steps, dag, group or loop node above a failure
			n.Phase, n.Message, n.FinishedAt = v4.WfRunning, "", time.Time{}
		}
		keep[id] = n
	}
	slices.Sort(removed)
	return keep, removed
}
