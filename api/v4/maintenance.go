package v4

import "time"

// Moves and drains (docs/maintenance.md). A move of one instance is asked by annotating
// its task group; the application controller places a replacement of the same index,
// waits for it to run (and pass its health checks), then stops the old one.
const (
	// MoveToAnnotation on a task group asks for it to be moved: a node name pins the
	// replacement there, MoveAnywhere lets the scheduler pick any node but the current one.
	MoveToAnnotation = "berth.io/move-to"
	// MovedFromAnnotation on a replacement names the task group it replaces.
	MovedFromAnnotation = "berth.io/moved-from"
	// MoveFailedAnnotation on a task group says why its last move failed (the
	// replacement could not be placed or ended before it was ready).
	MoveFailedAnnotation = "berth.io/move-failed"
	// MoveAnywhere is the MoveToAnnotation value for "any node but this one".
	MoveAnywhere = "*"
	// MoveAnywhereOrHere is the MoveToAnnotation value for "any node but this one, or
	// this one when no other can take it" (BCS's reschedule, MoveRequest.OrHere).
	MoveAnywhereOrHere = "*+"
	// StatefulAnnotation "true" on an application or process keeps its instances where
	// they are: moves and drains leave them unless forced.
	StatefulAnnotation = "berth.io/stateful"
	// InstanceEndsAnnotation "true" on a task group the controllers stop or delete says
	// its instance ends for good (its workload was deleted or scaled below its index):
	// the node's agent then removes the instance's volumes at once (docs/agent.md,
	// "Instance volumes"), not after its grace.
	InstanceEndsAnnotation = "berth.io/instance-ends"
)

// Stateful reports whether meta marks a workload stateful.
func Stateful(meta *ObjectMeta) bool { return meta.Annotations[StatefulAnnotation] == "true" }

// MoveRequest is the body of POST .../taskgroups/{name}/move.
type MoveRequest struct {
	// Node is the target node; empty means any node but the current one.
	Node string `json:"node,omitempty"`
	// Force moves the instance of a stateful workload too.
	Force bool `json:"force,omitempty"`
	// OrHere, without Node, lets the replacement start on the current node when no other
	// node can take it: it starts beside the old run, so the node needs room for both
	// until the old one stops. BCS's reschedule relaunched a task group on any node, the
	// same one included.
	OrHere bool `json:"orHere,omitempty"`
}

// Engine is the cluster-wide engine state (GET/PUT /v1/engine).
type Engine struct {
	// Maintenance on: the server refuses writes (423) and the controllers restart
	// nothing, so operators can work on the cluster without berth reacting to it.
	Maintenance bool   `json:"maintenance"`
	Reason      string `json:"reason,omitempty"`
	// Since is when maintenance was last turned on or off.
	Since time.Time `json:"since,omitzero"`
}

// MaxEngineReason bounds Engine.Reason.
const MaxEngineReason = 512

// DrainAnnotation on a node records a drain in progress (POST /v1/nodes/{name}/drain):
// DrainNormal, or DrainForce to move stateful instances too. The drain controller removes
// it when the drain ends; it lives in the store so a new leader carries the drain on.
const (
	DrainAnnotation = "berth.io/drain"
	DrainNormal     = "true"
	DrainForce      = "force"
)
