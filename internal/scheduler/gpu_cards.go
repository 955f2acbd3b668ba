package scheduler

import v4 "github.com/berthhq/berth/api/v4"

// The scheduler's view of a node's GPUs: every card with the cores and memory its task
// groups use, so a share of a card and a set of whole cards are chosen here, where the
// whole cluster is visible, and recorded on the task group (docs/gpus.md).

// gpuCard is one card of a node, as its agent reported it. It is never changed after
// setGPUs (clones share it); what is used of it is the node's gpuUsed.
type gpuCard struct {
	uuid    string
	index   int
	memMiB  int
	mig     bool
	healthy bool
	// links[j] is the rank (v4.GPULinkRank) of the link to the node's card j.
	links []uint8
}

// gpuUse is what task groups hold of one card: cores in hundredths and memory in MiB; a
// whole card holds 100 and all its memory.
type gpuUse struct{ cores, mem int }

// wholeFree reports a card that can be given out whole.
func (c *gpuCard) wholeFree(u gpuUse) bool { return c.healthy && u == gpuUse{} }

// setGPUs replaces the node's cards with its inventory, keeping what is used on cards
// it had before. It reports whether a card appeared that the node did not have: task
// groups placed on it must then be accounted again.
func (n *nodeState) setGPUs(inv []v4.NodeGPU) (appeared bool) {
	if len(inv) == 0 {
		n.gpus, n.gpuUsed = nil, nil
		return false
	}
	old := make(map[string]gpuUse, len(n.gpus))
	for i := range n.gpus {
		old[n.gpus[i].uuid] = n.gpuUsed[i]
	}
	pos := make(map[string]int, len(inv))
	for i, g := range inv {
		pos[g.UUID] = i
	}
	cards := make([]gpuCard, len(inv))
	used := make([]gpuUse, len(inv))
	for i, g := range inv {
		c := &cards[i]
		*c = gpuCard{uuid: g.UUID, index: g.Index, memMiB: g.MemoryMiB, mig: g.MIG, healthy: g.Unhealthy == ""}
		if prev, ok := old[g.UUID]; ok {
			used[i] = prev
		} else {
			appeared = true
		}
		c.links = make([]uint8, len(inv))
		for j := range c.links {
			c.links[j] = uint8(v4.GPULinkRank(""))
		}
	}
	for i, g := range inv { // a link counts in both directions, at its better rank
		for _, l := range g.Links {
			j, ok := pos[l.UUID]
			if !ok || j == i {
				continue
			}
			r := uint8(v4.GPULinkRank(l.Level))
			cards[i].links[j] = min(cards[i].links[j], r)
			cards[j].links[i] = min(cards[j].links[i], r)
		}
	}
	n.gpus, n.gpuUsed = cards, used
	return appeared
}

// cardAt returns the position of the node's card with the UUID, or -1.
func (n *nodeState) cardAt(uuid string) int {
	for i := range n.gpus {
		if n.gpus[i].uuid == uuid {
			return i
		}
	}
	return -1
}

// accountGPUs adds (sign +1) or removes (-1) the cards a task group holds on n. A card the
// node no longer reports holds nothing; it is accounted again if it comes back.
func (n *nodeState) accountGPUs(gpus []v4.TaskGPU, sign int) {
	for _, g := range gpus {
		if i := n.cardAt(g.UUID); i >= 0 {
			n.gpuUsed[i].cores += sign * g.Cores
			n.gpuUsed[i].mem += sign * g.MemoryMiB
		}
	}
}

// reaccountGPUs sets the node's card usage again from the task groups placed on it, after
// cards appeared (an agent that lost a card and found it again).
func (s *Snapshot) reaccountGPUs(n *nodeState) {
	clear(n.gpuUsed)
	for _, p := range s.tgs {
		if p.node == n.name && holdsResources(p.status) {
			n.accountGPUs(p.gpus, +1)
		}
	}
}

// hasGPUInventory reports a node whose agent fingerprinted its cards: GPU requests are
// placed card by card there, and counted as extended resources elsewhere.
func (n *nodeState) hasGPUInventory() bool { return len(n.gpus) > 0 }

// isGPUResource reports the extended resources the cards account for.
func isGPUResource(name string) bool {
	switch name {
	case v4.ResourceGPU, v4.ResourceVCUDACore, v4.ResourceVCUDAMemory:
		return true
	}
	return false
}

// LargestShareableGPU returns the memory of the largest card of the cluster that takes
// shares (healthy, not in MIG mode), 0 when there is none, and whether any node reports
// cards at all. Admission refuses a share no card could ever hold.
func (s *Snapshot) LargestShareableGPU() (memMiB int, anyCards bool) {
	for _, n := range s.byName {
		for i := range n.gpus {
			anyCards = true
			if c := &n.gpus[i]; c.healthy && !c.mig {
				memMiB = max(memMiB, c.memMiB)
			}
		}
	}
	return memMiB, anyCards
}
