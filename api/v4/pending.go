package v4

import (
	"slices"
	"time"
)

// Reasons of WorkloadStatus.Pending.
const (
	// PendingUnschedulable: no node takes the instances (the scheduler's answer is in Message).
	PendingUnschedulable = "Unschedulable"
	// PendingWaitingForHost: a restarted instance is held for its old node (hostRetainTime)
	// until Until, and that node cannot take it yet.
	PendingWaitingForHost = "WaitingForHost"
)

// MaxPendingListed bounds Pending.Indexes, so the status of a large application that
// fits nowhere stays small.
const MaxPendingListed = 20

// Pending says, for clients to read rather than parse the status message, why instances
// of a workload wait for a node: Kubernetes' PodScheduled condition False, for the
// workload. The status has none while no instance waits; objects written before it
// existed have none either.
type Pending struct {
	// Reason is PendingUnschedulable or PendingWaitingForHost.
	Reason string `json:"reason"`
	// Message is the scheduler's reason ("3 nodes: 2 insufficient cpu, 1 node not ready").
	Message string `json:"message"`
	// Check is the kind of check that rejected the most nodes (resources, ports,
	// constraint, ...), empty when no node was there to reject.
	Check string `json:"check,omitempty"`
	// Instances is how many instances wait; Indexes the lowest of them (at most
	// MaxPendingListed).
	Instances int   `json:"instances"`
	Indexes   []int `json:"indexes,omitempty"`
	// Node and Until: the node a WaitingForHost instance is held for, and until when.
	Node  string    `json:"node,omitempty"`
	Until time.Time `json:"until,omitzero"`
	// Since is when the instances began waiting for this reason (lastTransitionTime): it
	// stays while the reason does, so an unchanged wait writes nothing.
	Since time.Time `json:"since,omitzero"`
}

// Equal reports whether two pending reasons say the same; nil equals only nil.
func (p *Pending) Equal(o *Pending) bool {
	if p == nil || o == nil {
		return p == o
	}
	return p.Reason == o.Reason && p.Message == o.Message && p.Check == o.Check && p.Instances == o.Instances &&
		slices.Equal(p.Indexes, o.Indexes) && p.Node == o.Node && p.Until.Equal(o.Until) && p.Since.Equal(o.Since)
}
