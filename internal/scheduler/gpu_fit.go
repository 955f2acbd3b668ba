package scheduler

import (
	"cmp"
	"fmt"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
)

// TaskGPURequest is what one task of a request asks of GPUs.
type TaskGPURequest struct {
	Task string
	v4.GPURequest
}

// gpuOrder sorts a request's GPU asks so the hardest are served first: whole cards by
// count, then shares by cores and memory.
func gpuOrder(reqs []TaskGPURequest) []TaskGPURequest {
	out := slices.Clone(reqs)
	slices.SortStableFunc(out, func(a, b TaskGPURequest) int {
		if c := cmp.Compare(b.Cards, a.Cards); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Cores, a.Cores); c != 0 {
			return c
		}
		return cmp.Compare(b.MemoryMiB, a.MemoryMiB)
	})
	return out
}

// hasShare reports a request with a share of a card among its tasks.
func hasShare(reqs []TaskGPURequest) bool {
	return slices.ContainsFunc(reqs, func(r TaskGPURequest) bool { return r.Fractional() })
}

// fitsGPUs chooses the cards of every task of one task group on n, or says why there are
// none. Nodes without a GPU inventory count whole cards as extended resources
// (fitsResources) and take no share of a card.
func (st *reqState) fitsGPUs(n *nodeState) ([]v4.TaskGPU, string) {
	if len(st.gpus) == 0 {
		return nil, ""
	}
	if !n.hasGPUInventory() {
		if st.shares {
			return nil, "no GPU inventory (a share of a card needs the agent's card fingerprint)"
		}
		return nil, ""
	}
	used := append(st.gpuScratch[:0], n.gpuUsed...)
	st.gpuScratch = used
	var out []v4.TaskGPU
	for _, r := range st.gpus {
		if r.Cards > 0 {
			set := chooseCards(n.gpus, used, r.Cards)
			if set == nil {
				return nil, wholeCardsReason(r.Cards)
			}
			for _, i := range set {
				c := &n.gpus[i]
				used[i] = gpuUse{cores: v4.CoresPerGPU, mem: c.memMiB}
				out = append(out, v4.TaskGPU{Task: r.Task, UUID: c.uuid, Index: c.index, Cores: v4.CoresPerGPU, MemoryMiB: c.memMiB})
			}
			continue
		}
		i := chooseShare(n.gpus, used, r.Cores, r.MemoryMiB, st.binpack)
		if i < 0 {
			return nil, shareReason(n.gpus, r.Cores, r.MemoryMiB)
		}
		c := &n.gpus[i]
		used[i].cores += r.Cores
		used[i].mem += r.MemoryMiB
		out = append(out, v4.TaskGPU{Task: r.Task, UUID: c.uuid, Index: c.index, Cores: r.Cores, MemoryMiB: r.MemoryMiB})
	}
	return out, ""
}

func wholeCardsReason(n int) string {
	if n == 1 {
		return "no free whole GPU card"
	}
	return fmt.Sprintf("no %d free whole GPU cards", n)
}

// shareReason says why no card takes a share: none has that much memory at all, or none
// has that much free now. The words do not depend on the node, so plan reasons group.
func shareReason(cards []gpuCard, cores, memMiB int) string {
	biggest := 0
	for i := range cards {
		if cards[i].healthy && !cards[i].mig {
			biggest = max(biggest, cards[i].memMiB)
		}
	}
	if biggest == 0 {
		return "no healthy GPU card that takes shares (MIG cards are given out whole)"
	}
	if biggest < memMiB {
		return fmt.Sprintf("no card has %s of memory", formatMiB(memMiB))
	}
	return fmt.Sprintf("no card with %d free vcuda-core and %s", cores, formatMiB(memMiB))
}

// formatMiB writes card memory the way users think of it: GiB when whole.
func formatMiB(m int) string {
	if m >= 1024 && m%1024 == 0 {
		return fmt.Sprintf("%d GiB", m/1024)
	}
	return fmt.Sprintf("%d MiB", m)
}
