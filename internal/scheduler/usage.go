package scheduler

import (
	"maps"
	"time"
)

// NodeUsage is what a node's task groups hold, as the scheduler accounts it: the
// resources of those not ended, and how many task groups the node has.
type NodeUsage struct {
	CPU        float64            `json:"cpu"`
	MemoryMB   float64            `json:"memoryMB"`
	DiskMB     float64            `json:"diskMB"`
	Extended   map[string]float64 `json:"extended,omitempty"`
	TaskGroups int                `json:"taskGroups"`
	// GPUsInUse counts the node's cards that hold a share or are given out whole.
	GPUsInUse int `json:"gpusInUse,omitempty"`
	// OverheadCPU and OverheadMemoryMB are the part of CPU and MemoryMB that is the
	// executors' (DefaultOverhead for each task group holding resources), not the tasks'
	// requests: a
	// console explains with it why 3 tasks of 32 MB reserve 288 MB.
	OverheadCPU      float64 `json:"overheadCPU,omitempty"`
	OverheadMemoryMB float64 `json:"overheadMemoryMB,omitempty"`
	// RevocableCPU and RevocableMemoryMB are what the node's revocable task groups
	// reserve (docs/policy.md, "Revocable capacity"): not part of CPU and MemoryMB, which
	// count what non-revocable placements must leave alone.
	RevocableCPU      float64 `json:"revocableCPU,omitempty"`
	RevocableMemoryMB float64 `json:"revocableMemoryMB,omitempty"`
	// Lends is what the node lends the revocable tier out of idle reservations, as
	// placements reckon it (v4.Lent of its agent's report); absent without a fresh
	// report, when it lends nothing.
	Lends *NodeLends `json:"lends,omitempty"`
}

// NodeLends is a node's lent cpu and memory.
type NodeLends struct {
	CPU      float64 `json:"cpu"`
	MemoryMB float64 `json:"memoryMB"`
}

// Usage is the usage of each of the named nodes the snapshot knows at now: read off the
// nodes' own accounting, so a page of nodes costs its size, not the cluster's.
func (s *Snapshot) Usage(names []string, now time.Time) map[string]NodeUsage {
	out := make(map[string]NodeUsage, len(names))
	for _, name := range names {
		n, ok := s.byName[name]
		if !ok {
			continue
		}
		u := NodeUsage{CPU: n.usedCPU, MemoryMB: n.usedMem, DiskMB: n.usedDisk, TaskGroups: n.taskGroups,
			OverheadCPU: float64(n.holding) * DefaultOverhead.CPU, OverheadMemoryMB: float64(n.holding) * DefaultOverhead.MemoryMB,
			RevocableCPU: n.revCPU, RevocableMemoryMB: n.revMem}
		if len(n.usedExt) > 0 {
			u.Extended = maps.Clone(n.usedExt)
		}
		if n.lendsAt(now) {
			l := n.lendable(now)
			u.Lends = &NodeLends{CPU: l.LentCPU, MemoryMB: l.LentMemoryMB}
		}
		for _, g := range n.gpuUsed {
			if g != (gpuUse{}) {
				u.GPUsInUse++
			}
		}
		out[name] = u
	}
	return out
}
