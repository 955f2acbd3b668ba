package scheduler

import (
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
)

// The runtime check (docs/scheduling.md): a pod that names a container runtime
// (spec.runtime) goes only to a node whose container.runtimes set attribute holds it. A
// request without one skips the check at the cost of one comparison.

// runtimeOK reports whether n offers the runtime the request asks for (any, when none).
func (st *reqState) runtimeOK(n *nodeState) bool {
	return st.req.Runtime == "" || slices.Contains(n.set[v4.AttrContainerRuntimes], st.req.Runtime)
}

// runtimeFailure is the check's words for a node that does not offer runtime.
func runtimeFailure(runtime string) string {
	return "runtime " + runtime + ": the node does not offer it"
}
