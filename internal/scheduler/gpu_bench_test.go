package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// The GPU benchmark (docs/benchmarks.md, "GPU placement"): 5,000 nodes of 8 cards of
// 40 GiB wired as a DGX (NVLink pairs, two PCIe switches, two CPUs), and 10,000 requests
// of 1-6 instances: 60% a share (10-90 vcuda-core, 1-16 GiB), 25% one card, 10% two, 4%
// four, 1% eight. It reports the placement time and what is left for the next requests:
// cards still whole, cards partly used and their stranded cores, nodes still able to take
// eight cards, and how many multi-card sets are not linked by NVLink or one switch where
// the machine had such a set. The baseline places the same requests first-fit: the first
// node (by name) and the first cards that fit.

const (
	benchGPUNodes    = 5000
	benchGPUCards    = 8
	benchGPUMemMiB   = 40 * 1024
	benchGPURequests = 10000
)

func benchGPUSnapshot() *Snapshot {
	s := NewSnapshot()
	defer s.sortedNodes()
	for i := range benchGPUNodes {
		n := node(fmt.Sprintf("gpu-%05d", i), capacity(256, 2<<20, 1<<20), gpus(benchGPUCards, benchGPUMemMiB, dgxLinks))
		s.SetNode(n)
	}
	return s
}

func makeGPURequests() []*Request {
	rng := rand.New(rand.NewPCG(16, 5000))
	reqs := make([]*Request, benchGPURequests)
	for i := range reqs {
		var ask v4.GPURequest
		switch p := rng.IntN(100); {
		case p < 60:
			ask = v4.GPURequest{Cores: 10 * (1 + rng.IntN(9)), MemoryMiB: 1024 * (1 + rng.IntN(16))}
		case p < 85:
			ask = v4.GPURequest{Cards: 1}
		case p < 95:
			ask = v4.GPURequest{Cards: 2}
		case p < 99:
			ask = v4.GPURequest{Cards: 4}
		default:
			ask = v4.GPURequest{Cards: 8}
		}
		r := gpuRequest(1+rng.IntN(6), ask)
		r.App.Name = fmt.Sprintf("job-%05d", i)
		r.Resources.CPU, r.Resources.MemoryMB = 1, 1024
		reqs[i] = r
	}
	return reqs
}

// gpuLeft measures what a placement pass left on the cards.
type gpuLeft struct {
	placed, wholeFree, partial, strandedCores, eightFree, poorSets int
}

func (l *gpuLeft) report(b *testing.B) {
	b.ReportMetric(float64(l.placed), "placed")
	b.ReportMetric(float64(l.wholeFree), "whole-free-cards")
	b.ReportMetric(float64(l.partial), "partly-used-cards")
	b.ReportMetric(float64(l.strandedCores)/float64(max(l.partial, 1)), "free-cores/partly-used-card")
	b.ReportMetric(float64(l.eightFree), "8-card-nodes")
	b.ReportMetric(float64(l.poorSets), "poorly-linked-sets")
}

// measureCards counts free and partly used cards: used[node][card] holds cores used.
func (l *gpuLeft) measureCards(used [][]int) {
	for _, cards := range used {
		free := 0
		for _, c := range cards {
			switch {
			case c == 0:
				free++
			case c < v4.CoresPerGPU:
				l.partial++
				l.strandedCores += v4.CoresPerGPU - c
			}
		}
		l.wholeFree += free
		if free == benchGPUCards {
			l.eightFree++
		}
	}
}

// poorlyLinked reports a 2- or 4-card set outside one NVLink pair or one switch, where
// dgxLinks had a better one among the cards free before it was taken.
func poorlyLinked(set []int, freeBefore func(int) bool) bool {
	worst := 0
	for i := range set {
		for j := i + 1; j < len(set); j++ {
			worst = max(worst, v4.GPULinkRank(dgxLinks(set[i], set[j])))
		}
	}
	best := 4
	switch len(set) {
	case 2:
		for p := 0; p < benchGPUCards; p += 2 {
			if freeBefore(p) && freeBefore(p+1) {
				best = min(best, 1)
			}
		}
		for half := 0; half < benchGPUCards; half += 4 {
			n := 0
			for c := half; c < half+4; c++ {
				if freeBefore(c) {
					n++
				}
			}
			if n >= 2 {
				best = min(best, 2)
			}
		}
	case 4:
		for half := 0; half < benchGPUCards; half += 4 {
			if freeBefore(half) && freeBefore(half+1) && freeBefore(half+2) && freeBefore(half+3) {
				best = 2
			}
		}
	default:
		return false
	}
	return worst > best
}

func BenchmarkGPUPlace(b *testing.B) {
	reqs := makeGPURequests()
	base := benchGPUSnapshot()
	for _, strategy := range []string{Binpack, Spread} {
		b.Run(strategy, func(b *testing.B) {
			var s *Snapshot
			results := make([]Result, len(reqs))
			for b.Loop() {
				b.StopTimer()
				s = base.Clone()
				b.StartTimer()
				for i, r := range reqs {
					results[i] = s.Place(r, Options{Strategy: strategy})
				}
			}
			left := replayGPUResults(reqs, results)
			var used [][]int
			for _, n := range s.sortedNodes() {
				cards := make([]int, len(n.gpuUsed))
				for i, u := range n.gpuUsed {
					cards[i] = u.cores
				}
				used = append(used, cards)
			}
			left.measureCards(used)
			left.report(b)
		})
	}
	b.Run("first-fit", func(b *testing.B) {
		var left gpuLeft
		var used [][]int
		for b.Loop() {
			left = gpuLeft{}
			used, left.placed, left.poorSets = firstFit(reqs)
		}
		left.measureCards(used)
		left.report(b)
	})
}

// replayGPUResults counts the placements and the poorly linked sets, replaying the cards
// each placement found free.
func replayGPUResults(reqs []*Request, results []Result) gpuLeft {
	var left gpuLeft
	used := map[string][]int{} // node -> cores used per card
	for i, res := range results {
		for _, p := range res.Placements {
			left.placed++
			cards := used[p.Node]
			if cards == nil {
				cards = make([]int, benchGPUCards)
				used[p.Node] = cards
			}
			set := make([]int, 0, len(p.GPUs))
			for _, g := range p.GPUs {
				set = append(set, g.Index)
			}
			if reqs[i].GPUs[0].Cards > 0 && poorlyLinked(set, func(c int) bool { return cards[c] == 0 }) {
				left.poorSets++
			}
			for _, g := range p.GPUs {
				cards[g.Index] += g.Cores
			}
		}
	}
	return left
}

// firstFit is the baseline: plain arrays, the first node and the first cards that fit.
func firstFit(reqs []*Request) (used [][]int, placed, poorSets int) {
	cores := make([][]int, benchGPUNodes)
	mem := make([][]int, benchGPUNodes)
	cpu := make([]float64, benchGPUNodes)
	for i := range cores {
		cores[i] = make([]int, benchGPUCards)
		mem[i] = make([]int, benchGPUCards)
	}
	for _, r := range reqs {
		ask := r.GPUs[0]
		for range r.Indexes {
			for n := range benchGPUNodes {
				if cpu[n]+r.Resources.CPU > 256 {
					continue
				}
				var set []int
				if ask.Cards > 0 {
					for c := 0; c < benchGPUCards && len(set) < ask.Cards; c++ {
						if cores[n][c] == 0 && mem[n][c] == 0 {
							set = append(set, c)
						}
					}
					if len(set) < ask.Cards {
						continue
					}
					if poorlyLinked(set, func(c int) bool { return cores[n][c] == 0 }) {
						poorSets++
					}
					for _, c := range set {
						cores[n][c], mem[n][c] = v4.CoresPerGPU, benchGPUMemMiB
					}
				} else {
					c := 0
					for c < benchGPUCards && (cores[n][c]+ask.Cores > v4.CoresPerGPU || mem[n][c]+ask.MemoryMiB > benchGPUMemMiB) {
						c++
					}
					if c == benchGPUCards {
						continue
					}
					cores[n][c] += ask.Cores
					mem[n][c] += ask.MemoryMiB
				}
				cpu[n] += r.Resources.CPU
				placed++
				break
			}
		}
	}
	return cores, placed, poorSets
}
