package scheduler

import (
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
)

// Choosing cards on one node. A share goes to one card: with binpack the card it leaves
// fullest (shares gather on few cards, whole cards stay free), with spread the emptiest.
// Whole cards go as a set whose worst link is best, then whose links sum lowest (NVLink
// over a PCIe switch over one CPU over crossing CPUs), as gpu-manager's topology tree
// chose them; a single card is the one least linked to the other free cards, so
// well-linked sets stay whole for the requests that need them.

// maxExactSets bounds the card sets compared one by one; beyond it (many free cards and a
// large request) the set is grown greedily from each free card.
const maxExactSets = 4096

// chooseShare returns the position of the card that takes cores and memMiB, or -1.
func chooseShare(cards []gpuCard, used []gpuUse, cores, memMiB int, binpack bool) int {
	best := -1
	var bestCores, bestMem int // free after the share
	for i := range cards {
		c := &cards[i]
		if !c.healthy || c.mig {
			continue
		}
		freeCores, freeMem := v4.CoresPerGPU-used[i].cores-cores, c.memMiB-used[i].mem-memMiB
		if freeCores < 0 || freeMem < 0 {
			continue
		}
		switch {
		case best < 0:
		case binpack && (freeCores < bestCores || freeCores == bestCores && freeMem < bestMem):
		case !binpack && (freeCores > bestCores || freeCores == bestCores && freeMem > bestMem):
		default:
			continue
		}
		best, bestCores, bestMem = i, freeCores, freeMem
	}
	return best
}

// chooseCards returns the positions of n whole free cards with the best links, or nil.
func chooseCards(cards []gpuCard, used []gpuUse, n int) []int {
	free := make([]int, 0, len(cards))
	for i := range cards {
		if cards[i].wholeFree(used[i]) {
			free = append(free, i)
		}
	}
	switch {
	case len(free) < n || n <= 0:
		return nil
	case len(free) == n:
		return free
	case n == 1:
		return []int{loneliestCard(cards, free)}
	case binomialAtMost(len(free), n, maxExactSets) <= maxExactSets:
		return bestSetExact(cards, free, n)
	}
	return bestSetGreedy(cards, free, n)
}

// loneliestCard is the free card whose best link to another free card is worst.
func loneliestCard(cards []gpuCard, free []int) int {
	best, bestLink := free[0], uint8(0)
	for _, i := range free {
		closest := uint8(255)
		for _, j := range free {
			if j != i {
				closest = min(closest, cards[i].links[j])
			}
		}
		if closest > bestLink {
			best, bestLink = i, closest
		}
	}
	return best
}

// setCost ranks a card set: its worst link, then the sum of its links; lower is better.
type setCost struct{ worst, sum int }

func (a setCost) less(b setCost) bool {
	return a.worst < b.worst || a.worst == b.worst && a.sum < b.sum
}

func costOf(cards []gpuCard, set []int) setCost {
	var c setCost
	for a := range set {
		for b := a + 1; b < len(set); b++ {
			r := int(cards[set[a]].links[set[b]])
			c.worst = max(c.worst, r)
			c.sum += r
		}
	}
	return c
}

// bestSetExact compares every set of n free cards (in order, so the first best wins).
func bestSetExact(cards []gpuCard, free []int, n int) []int {
	pick := make([]int, n) // positions in free, increasing
	for i := range pick {
		pick[i] = i
	}
	set := make([]int, n)
	var best []int
	var bestCost setCost
	for {
		for i, p := range pick {
			set[i] = free[p]
		}
		if c := costOf(cards, set); best == nil || c.less(bestCost) {
			best, bestCost = append(best[:0], set...), c
		}
		// next combination
		i := n - 1
		for i >= 0 && pick[i] == len(free)-n+i {
			i--
		}
		if i < 0 {
			return best
		}
		pick[i]++
		for j := i + 1; j < n; j++ {
			pick[j] = pick[j-1] + 1
		}
	}
}

// bestSetGreedy grows a set from each free card, adding the card closest to the set, and
// keeps the best set found.
func bestSetGreedy(cards []gpuCard, free []int, n int) []int {
	var best []int
	var bestCost setCost
	in := make([]bool, len(cards))
	for _, seed := range free {
		clear(in)
		set := []int{seed}
		in[seed] = true
		for len(set) < n {
			next, nextCost := -1, setCost{}
			for _, j := range free {
				if in[j] {
					continue
				}
				var c setCost
				for _, k := range set {
					r := int(cards[j].links[k])
					c.worst = max(c.worst, r)
					c.sum += r
				}
				if next < 0 || c.less(nextCost) {
					next, nextCost = j, c
				}
			}
			set = append(set, next)
			in[next] = true
		}
		if c := costOf(cards, set); best == nil || c.less(bestCost) {
			best, bestCost = set, c
		}
	}
	slices.Sort(best)
	return best
}

// binomialAtMost returns C(n, k), or limit+1 once it exceeds limit.
func binomialAtMost(n, k, limit int) int {
	k = min(k, n-k)
	c := 1
	for i := 1; i <= k; i++ {
		c = c * (n - k + i) / i // exact: c is C(n-k+i, i) after the step
		if c > limit {
			return limit + 1
		}
	}
	return c
}
