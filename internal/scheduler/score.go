package scheduler

// point ranks nodes as BCS ranks offers: free cpu ratio plus free memory ratio. Spread
// takes the highest point first, binpack the lowest that fits.
func point(n *nodeState) float64 {
	p := 0.0
	if n.alloc.CPU > 0 {
		p += (n.alloc.CPU - n.usedCPU) / n.alloc.CPU
	}
	if n.alloc.MemoryMB > 0 {
		p += (n.alloc.MemoryMB - n.usedMem) / n.alloc.MemoryMB
	}
	return p
}

// point ranks a node for one request. For a request with GPUs the cards come first
// (gpuPoint, weighted over cpu and memory, which only break ties): they are the scarce
// resource of a GPU node.
func (st *reqState) point(n *nodeState) float64 {
	p := point(n)
	if len(st.gpus) > 0 {
		p += gpuWeight * st.gpuPoint(n)
	}
	return p
}

// candidate is a node that passed the static checks of one request.
type candidate struct {
	node  *nodeState
	order int // position by name, the tie-breaker
	score float64
	// avoided: an untolerated PreferNoSchedule taint puts the node after every node
	// without one, whatever the scores, and before none that fits.
	avoided bool
}

// better reports whether a should be chosen over b.
func better(a, b *candidate, binpack bool) bool {
	if a.avoided != b.avoided {
		return b.avoided
	}
	if a.score != b.score {
		if binpack {
			return a.score < b.score
		}
		return a.score > b.score
	}
	return a.order < b.order
}

// candHeap keeps the best candidate on top (container/heap).
type candHeap struct {
	items   []*candidate
	binpack bool
}

func (h *candHeap) Len() int           { return len(h.items) }
func (h *candHeap) Less(i, j int) bool { return better(h.items[i], h.items[j], h.binpack) }
func (h *candHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *candHeap) Push(x any)         { h.items = append(h.items, x.(*candidate)) }
func (h *candHeap) Pop() any {
	last := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return last
}
