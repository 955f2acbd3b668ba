package v4

// Types of POST /v1/plan, shared by the server and its clients. A plan runs the
// scheduler on a copy of its snapshot and writes nothing.

// PlanResult is the answer of a plan: one entry per placeable object of the stream, in
// stream order, and the objects that are not placed (configmaps, services, ...).
type PlanResult struct {
	Results []PlanObject `json:"results"`
	Skipped []PlanSkip   `json:"skipped"`
}

// PlanObject is what the scheduler would do with one application, process, deployment
// or daemonset: where each missing instance would go, and which fit nowhere and why.
type PlanObject struct {
	Kind      Kind   `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Existing are the indexes that already have a task group; they are not placed again.
	Existing   []int           `json:"existing"`
	Placements []PlanPlacement `json:"placements"`
	Unplaced   []int           `json:"unplaced"`
	// Reason and Message are set when Unplaced is not empty.
	Reason  *PlanReason `json:"reason,omitempty"`
	Message string      `json:"message,omitempty"`
	// Preemptions are the instances of Placements that go where they go only by
	// evicting lower priorities (docs/policy.md, "Priorities and preemption").
	Preemptions []PlanPreemption `json:"preemptions,omitempty"`
}

// PlanPreemption is one instance and the task groups evicted for it on its node.
type PlanPreemption struct {
	Index   int          `json:"index"`
	Node    string       `json:"node"`
	Victims []PlanVictim `json:"victims"`
	// Hidden counts the victims in namespaces the caller may not read: they are not
	// named.
	Hidden int `json:"hidden,omitempty"`
}

// PlanVictim is a task group a preemption would stop, and its owner.
type PlanVictim struct {
	Kind      Kind   `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	TaskGroup string `json:"taskgroup"`
	Index     int    `json:"index"`
	Priority  int    `json:"priority"`
}

// Fits reports whether every instance the plan looked at found a node.
func (p PlanObject) Fits() bool { return len(p.Unplaced) == 0 }

// PlanPlacement is one instance and the node it would go to, with its host ports.
type PlanPlacement struct {
	Index int             `json:"index"`
	Node  string          `json:"node"`
	Ports []AllocatedPort `json:"ports"`
	// GPUs are the cards its tasks would get.
	GPUs []TaskGPU `json:"gpus,omitempty"`
	// PassedOver are ports of the node's ranges below its random ports that it would not
	// get because other programs hold them (the node's status.busyPorts), at most 16.
	PassedOver []int `json:"passedOver,omitempty"`
}

// PlanReason says, per check, how many nodes it was the first to reject.
type PlanReason struct {
	Nodes  int         `json:"nodes"`
	Checks []PlanCheck `json:"checks"`
}

// PlanCheck is one feasibility check and the number of nodes it rejected.
type PlanCheck struct {
	Check string `json:"check"`
	Nodes int    `json:"nodes"`
}

// PlanSkip names an object of the stream that the scheduler does not place.
type PlanSkip struct {
	Kind      Kind   `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Reason    string `json:"reason,omitempty"`
}
