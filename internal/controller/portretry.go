package controller

import (
	"fmt"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
)

// Port conflicts (docs/scheduling.md, "Busy ports"): a run whose start found host ports
// it was given held by another program on the node ends Failed with ReasonPortConflict.
// When every such port was a random one, the scheduler chose badly (the program came
// after the node last reported its busy ports): the instance is placed again at once, on
// other ports, and it counts as neither a restart nor a crash loop. A fixed port is what
// the spec asks for, so that run goes through the restart policy as any failure; either
// way its replacement is kept off the ports found taken on that node.

// maxPortRetries bounds the re-placements in a row: past it, the restart policy and its
// waits take over, so a node whose every port some program grabs cannot make an
// instance spin.
const maxPortRetries = 5

// portRetry reports an ended run to place again at once on other ports.
func portRetry(tg *v4.TaskGroup) bool {
	st := &tg.Status
	if st.Phase != v4.StatusFailed || st.Reason != v4.ReasonPortConflict || len(st.PortsTaken) == 0 ||
		tg.Spec.PortRetries >= maxPortRetries {
		return false
	}
	for _, b := range st.PortsTaken {
		if !slices.ContainsFunc(tg.Spec.Ports, func(p v4.AllocatedPort) bool { return p.HostPort == b.Port && p.Random }) {
			return false
		}
	}
	return true
}

// takenPorts are the ports an ended run found taken, as a request keeps off them: by
// node (nil when the run ended otherwise).
func takenPorts(tg *v4.TaskGroup) map[string][]int {
	if tg.Status.Reason != v4.ReasonPortConflict || len(tg.Status.PortsTaken) == 0 || tg.Spec.Node == "" {
		return nil
	}
	ports := make([]int, len(tg.Status.PortsTaken))
	for i, b := range tg.Status.PortsTaken {
		ports[i] = b.Port
	}
	return map[string][]int{tg.Spec.Node: ports}
}

// addTakenPorts keeps req off the ports in taken (takenPorts of ended runs).
func addTakenPorts(req *scheduler.Request, taken map[string][]int) {
	for node, ports := range taken {
		if req.TakenPorts == nil {
			req.TakenPorts = map[string][]int{}
		}
		for _, p := range ports {
			if !slices.Contains(req.TakenPorts[node], p) {
				req.TakenPorts[node] = append(req.TakenPorts[node], p)
			}
		}
	}
}

// portRetryMessage says why an instance is placed again without a restart.
func portRetryMessage(what string, tg *v4.TaskGroup, retry int) string {
	return fmt.Sprintf("%s: %s did not start on node %s, its host ports were taken (%s); placing it again on other ports (port retry %d of %d)",
		what, tg.Metadata.Name, tg.Spec.Node, v4.PortsString(tg.Status.PortsTaken), retry, maxPortRetries)
}
