package scheduler

// NodeFit is the answer for one node of PlaceOn.
type NodeFit struct {
	Node string
	// Placement is set when the instance was placed on the node.
	Placement *Placement
	// Reason is the first check the node fails when Placement is nil.
	Reason string
	// Eligible says that the node itself suits the request: it exists, is ready and
	// enabled, its taints are tolerated, it offers the runtime asked for, runs the node
	// plugins of the pod's CSI volumes in their topology, and the
	// constraints that do not count task groups accept it. A node that is eligible but got no placement lacks room (resources,
	// ports, counts), which may clear later.
	Eligible bool
	// Ready says the snapshot has the node, ready and enabled. A caller that read the
	// node from the store as ready sees here whether the snapshot caught up with it.
	Ready bool
}

// PlaceOn places instance req.Indexes[i] on nodes[i] and nowhere else, updating the
// snapshot for each placement: a daemonset restarts its task group on the same node, and
// a new node gets its own. Indexes beyond len(nodes) are ignored.
func (s *Snapshot) PlaceOn(req *Request, nodes []string, opts Options) []NodeFit {
	st := s.compile(req, opts)
	out := make([]NodeFit, 0, len(nodes))
	for i, name := range nodes {
		if i >= len(req.Indexes) {
			break
		}
		fit := NodeFit{Node: name}
		n := s.byName[name]
		switch {
		case n == nil:
			fit.Reason = "node not found"
		default:
			fit.Ready, _ = checkNode(n)
			_, bad := st.tol.untolerated(n)
			fit.Eligible = fit.Ready && !bad && st.runtimeOK(n) && st.volumesReachable(n) == "" && st.staticItemsOK(n)
			if why := st.firstFailure(n); why != "" {
				fit.Reason = why
			} else {
				p := s.placeOn(st, n, req.Indexes[i])
				fit.Placement = &p
			}
		}
		out = append(out, fit)
	}
	if len(st.app.tgs) == 0 {
		delete(s.apps, req.App)
	}
	return out
}
