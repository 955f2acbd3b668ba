package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// TestPropertyGPUPlacement places random GPU requests on random GPU clusters and replays
// every placement against a plain model of the cards: no card is over-committed (cores,
// memory, a whole card shared), a share never spans cards, whole cards are free, healthy
// and (for one GPU task per group) a set with the best worst link among the free cards;
// and when instances stay unplaced, no node could take one more.
func TestPropertyGPUPlacement(t *testing.T) {
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 16))
		nodes := randomGPUNodes(rng)
		m := newCardModel(nodes)
		tgs := m.randomHeld(rng, nodes)
		req := randomGPURequest(rng)
		s := snapshotOf(nodes, tgs...)
		res := s.Place(req, Options{Strategy: []string{Spread, Binpack}[rng.IntN(2)]})
		for _, p := range res.Placements {
			if err := m.take(req, p); err != nil {
				t.Fatalf("seed %d: instance %d on %s: %v\nrequest %+v", seed, p.Index, p.Node, err, req.GPUs)
			}
		}
		if len(res.Unplaced) > 0 && len(req.GPUs) == 1 {
			for _, n := range nodes {
				if m.fits(n.Metadata.Name, req.GPUs[0].GPURequest) {
					t.Fatalf("seed %d: %d unplaced (%v) but %s still takes %+v", seed, len(res.Unplaced), res.Reason, n.Metadata.Name, req.GPUs[0])
				}
			}
		}
	}
}

// randomGPUNodes makes 1-8 nodes of 0-8 cards on two CPUs, two PCIe switches per CPU,
// NVLink within some switches: a tree, so the best set by worst link is well defined.
func randomGPUNodes(rng *rand.Rand) []*v4.Node {
	var nodes []*v4.Node
	for i := range 1 + rng.IntN(8) {
		name := fmt.Sprintf("g%d", i)
		cards := rng.IntN(9)
		nvlink := [4]bool{rng.IntN(2) == 0, rng.IntN(2) == 0, rng.IntN(2) == 0, rng.IntN(2) == 0}
		sw := func(c int) int { return c * 4 / max(cards, 1) } // switch 0-3
		link := func(a, b int) string {
			switch {
			case sw(a) == sw(b) && nvlink[sw(a)]:
				return v4.GPULinkNVLink
			case sw(a) == sw(b):
				return v4.GPULinkPCIeSwitch
			case sw(a)/2 == sw(b)/2:
				return v4.GPULinkCPU
			}
			return v4.GPULinkCrossCPU
		}
		n := node(name, gpus(cards, 1024*(8+8*rng.IntN(4)), link))
		for g := range n.Spec.GPUs {
			if rng.IntN(12) == 0 {
				n.Spec.GPUs[g].Unhealthy = "XID 48"
			}
			if rng.IntN(12) == 0 {
				n.Spec.GPUs[g].MIG = true
			}
		}
		nodes = append(nodes, n)
	}
	return nodes
}

func randomGPURequest(rng *rand.Rand) *Request {
	ask := func() v4.GPURequest {
		if rng.IntN(3) == 0 {
			return v4.GPURequest{Cards: 1 + rng.IntN(4)}
		}
		return v4.GPURequest{Cores: 1 + rng.IntN(99), MemoryMiB: v4.VCUDAMemoryUnit * (1 + rng.IntN(40))}
	}
	asks := []v4.GPURequest{ask()}
	if rng.IntN(3) == 0 {
		asks = append(asks, ask())
	}
	req := gpuRequest(1+rng.IntN(12), asks...)
	req.Resources.CPU, req.Resources.MemoryMB = 0.01, 1 // only the cards run out
	return req
}

// cardModel is the oracle's plain state of every card.
type cardModel struct {
	cards map[string][]*modelCard // node -> cards in order
}

type modelCard struct {
	gpu        v4.NodeGPU
	cores, mem int
	whole      bool
	linkTo     map[string]int // UUID -> rank
}

func newCardModel(nodes []*v4.Node) *cardModel {
	m := &cardModel{cards: map[string][]*modelCard{}}
	for _, n := range nodes {
		for _, g := range n.Spec.GPUs {
			c := &modelCard{gpu: g, linkTo: map[string]int{}}
			for _, l := range g.Links {
				c.linkTo[l.UUID] = v4.GPULinkRank(l.Level)
			}
			m.cards[n.Metadata.Name] = append(m.cards[n.Metadata.Name], c)
		}
	}
	return m
}

// randomHeld makes task groups that already hold shares and whole cards, within the
// cards' capacity, and records them in the model.
func (m *cardModel) randomHeld(rng *rand.Rand, nodes []*v4.Node) []*v4.TaskGroup {
	var tgs []*v4.TaskGroup
	for i := range rng.IntN(10) {
		n := nodes[rng.IntN(len(nodes))].Metadata.Name
		cards := m.cards[n]
		if len(cards) == 0 {
			continue
		}
		c := cards[rng.IntN(len(cards))]
		var held v4.TaskGPU
		switch {
		case rng.IntN(3) == 0 && c.cores == 0 && c.mem == 0:
			held = v4.TaskGPU{Task: "t", UUID: c.gpu.UUID, Index: c.gpu.Index, Cores: v4.CoresPerGPU, MemoryMiB: c.gpu.MemoryMiB}
			c.whole = true
		case !c.whole && c.cores < 90 && c.mem+1024 <= c.gpu.MemoryMiB:
			held = v4.TaskGPU{Task: "t", UUID: c.gpu.UUID, Index: c.gpu.Index, Cores: 1 + rng.IntN(90-c.cores), MemoryMiB: 1024}
		default:
			continue
		}
		c.cores += held.Cores
		c.mem += held.MemoryMiB
		tgs = append(tgs, gpuTG(200+i, n, held))
	}
	return tgs
}

// take replays one placement: every task gets what it asked, on cards that had room.
func (m *cardModel) take(req *Request, p Placement) error {
	byTask := map[string][]v4.TaskGPU{}
	for _, g := range p.GPUs {
		byTask[g.Task] = append(byTask[g.Task], g)
	}
	// whole cards are served first, as the scheduler does; check the links then
	for _, r := range gpuOrder(req.GPUs) {
		got := byTask[r.Task]
		if r.Cards > 0 {
			if len(got) != r.Cards {
				return fmt.Errorf("task %s asked %d whole cards, got %v", r.Task, r.Cards, got)
			}
			if len(req.GPUs) == 1 {
				if best, chosen := m.bestWorstLink(p.Node, r.Cards), m.worstLink(p.Node, got); chosen != best {
					return fmt.Errorf("task %s got cards %v with worst link %d; %d was possible", r.Task, got, chosen, best)
				}
			}
		} else if len(got) != 1 || got[0].Cores != r.Cores || got[0].MemoryMiB != r.MemoryMiB {
			return fmt.Errorf("task %s asked a share %+v of one card, got %v", r.Task, r.GPURequest, got)
		}
		for _, g := range got {
			c := m.card(p.Node, g.UUID)
			switch {
			case c == nil:
				return fmt.Errorf("card %s is not on the node", g.UUID)
			case c.gpu.Unhealthy != "":
				return fmt.Errorf("card %s is unhealthy", g.UUID)
			case r.Cards > 0 && (c.cores != 0 || c.mem != 0):
				return fmt.Errorf("whole card %s was in use (%d cores, %d MiB)", g.UUID, c.cores, c.mem)
			case r.Cards == 0 && (c.whole || c.gpu.MIG):
				return fmt.Errorf("a share went to card %s, whole or in MIG mode", g.UUID)
			case r.Cards > 0 && g.MemoryMiB != c.gpu.MemoryMiB:
				return fmt.Errorf("whole card %s with %d MiB of its %d", g.UUID, g.MemoryMiB, c.gpu.MemoryMiB)
			}
			c.cores += g.Cores
			c.mem += g.MemoryMiB
			c.whole = c.whole || r.Cards > 0
			if c.cores > v4.CoresPerGPU || c.mem > c.gpu.MemoryMiB {
				return fmt.Errorf("card %s over-committed: %d cores, %d of %d MiB", g.UUID, c.cores, c.mem, c.gpu.MemoryMiB)
			}
		}
	}
	return nil
}

func (m *cardModel) card(node, uuid string) *modelCard {
	for _, c := range m.cards[node] {
		if c.gpu.UUID == uuid {
			return c
		}
	}
	return nil
}

func (m *cardModel) freeCards(node string) []*modelCard {
	var out []*modelCard
	for _, c := range m.cards[node] {
		if c.gpu.Unhealthy == "" && c.cores == 0 && c.mem == 0 {
			out = append(out, c)
		}
	}
	return out
}

// fits reports whether one more task group with one GPU ask fits the node's cards.
func (m *cardModel) fits(node string, r v4.GPURequest) bool {
	if r.Cards > 0 {
		return len(m.freeCards(node)) >= r.Cards
	}
	for _, c := range m.cards[node] {
		if c.gpu.Unhealthy == "" && !c.gpu.MIG && !c.whole && c.cores+r.Cores <= v4.CoresPerGPU && c.mem+r.MemoryMiB <= c.gpu.MemoryMiB {
			return true
		}
	}
	return false
}

func (m *cardModel) worstLink(node string, got []v4.TaskGPU) int {
	worst := 0
	for i := range got {
		for j := i + 1; j < len(got); j++ {
			worst = max(worst, m.card(node, got[i].UUID).linkTo[got[j].UUID])
		}
	}
	return worst
}

// bestWorstLink tries every set of k free cards.
func (m *cardModel) bestWorstLink(node string, k int) int {
	free := m.freeCards(node)
	best := 99
	var walk func(start int, set []*modelCard)
	walk = func(start int, set []*modelCard) {
		if len(set) == k {
			worst := 0
			for i := range set {
				for j := i + 1; j < len(set); j++ {
					worst = max(worst, set[i].linkTo[set[j].gpu.UUID])
				}
			}
			best = min(best, worst)
			return
		}
		for i := start; i < len(free); i++ {
			walk(i+1, append(set, free[i]))
		}
	}
	walk(0, nil)
	return best
}
