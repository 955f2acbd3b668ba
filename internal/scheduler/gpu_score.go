package scheduler

import v4 "github.com/berthhq/berth/api/v4"

// gpuWeight puts a GPU request's card fit above the node's cpu and memory (0-2).
const gpuWeight = 10

// gpuPoint ranks a node by the cards its hardest GPU ask would leave, 0-1, lower when
// fuller: binpack takes the lowest, spread the highest. A share counts the free cores of
// the card it would take (binpack then fills the partly used cards of the whole cluster
// before it starts a new one); whole cards count the node's free cards. A node that
// cannot take the ask ranks last either way, so placement does not stop at it each time.
func (st *reqState) gpuPoint(n *nodeState) float64 {
	last := 2.0
	if !st.binpack {
		last = -1
	}
	if !n.hasGPUInventory() {
		return last
	}
	ask := st.gpus[0]
	if ask.Cards == 0 {
		i := chooseShare(n.gpus, n.gpuUsed, ask.Cores, ask.MemoryMiB, st.binpack)
		if i < 0 {
			return last
		}
		return float64(v4.CoresPerGPU-n.gpuUsed[i].cores-ask.Cores) / v4.CoresPerGPU
	}
	free := 0
	for i := range n.gpus {
		if n.gpus[i].wholeFree(n.gpuUsed[i]) {
			free++
		}
	}
	if free < ask.Cards {
		return last
	}
	return float64(free) / float64(len(n.gpus))
}
