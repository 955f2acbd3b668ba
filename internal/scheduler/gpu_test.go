package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// dgxLinks wires 8 cards as a DGX-1-like machine: NVLink pairs (0-1, 2-3, 4-5, 6-7),
// pairs 0-3 and 4-7 behind one PCIe switch each, one CPU per half.
func dgxLinks(i, j int) string {
	switch {
	case i/2 == j/2:
		return v4.GPULinkNVLink
	case i/4 == j/4:
		return v4.GPULinkPCIeSwitch
	}
	return v4.GPULinkCrossCPU
}

// gpus gives a node n cards of memMiB each, linked by link (nil: no links known).
func gpus(n, memMiB int, link func(i, j int) string) nodeOpt {
	return func(node *v4.Node) {
		for i := range n {
			g := v4.NodeGPU{UUID: fmt.Sprintf("GPU-%s-%d", node.Metadata.Name, i), Index: i, Minor: i, Model: "A100", MemoryMiB: memMiB, NUMANode: i / 4}
			for j := range n {
				if j != i && link != nil {
					g.Links = append(g.Links, v4.GPULink{UUID: fmt.Sprintf("GPU-%s-%d", node.Metadata.Name, j), Level: link(i, j)})
				}
			}
			node.Spec.GPUs = append(node.Spec.GPUs, g)
		}
	}
}

// gpuTG is a task group holding cards on a node.
func gpuTG(index int, nodeName string, held ...v4.TaskGPU) *v4.TaskGroup {
	t := tg(otherApp, index, nodeName, v4.StatusRunning, nil, nil)
	t.Spec.GPUs = held
	return t
}

func share(node string, card, cores, memMiB int) v4.TaskGPU {
	return v4.TaskGPU{Task: "t", UUID: fmt.Sprintf("GPU-%s-%d", node, card), Index: card, Cores: cores, MemoryMiB: memMiB}
}

func whole(node string, card, memMiB int) v4.TaskGPU {
	return share(node, card, v4.CoresPerGPU, memMiB)
}

// gpuRequest asks for instances whose tasks have the GPU asks, summed as extended
// resources too, as RequestFor does.
func gpuRequest(instances int, asks ...v4.GPURequest) *Request {
	req := request(webApp, nil, instances)
	req.Resources.Extended = map[string]float64{}
	for i, a := range asks {
		req.GPUs = append(req.GPUs, TaskGPURequest{Task: fmt.Sprintf("t%d", i), GPURequest: a})
		if a.Cards > 0 {
			req.Resources.Extended[v4.ResourceGPU] += float64(a.Cards)
		} else {
			req.Resources.Extended[v4.ResourceVCUDACore] += float64(a.Cores)
			req.Resources.Extended[v4.ResourceVCUDAMemory] += float64(a.MemoryMiB / v4.VCUDAMemoryUnit)
		}
	}
	return req
}

// placedCards writes a result's cards as "node:index(cores)" per instance.
func placedCards(res Result) []string {
	var out []string
	for _, p := range res.Placements {
		var cards []string
		for _, g := range p.GPUs {
			cards = append(cards, fmt.Sprintf("%d(%d)", g.Index, g.Cores))
		}
		out = append(out, p.Node+":"+strings.Join(cards, ","))
	}
	return out
}

func TestGPUPlacement(t *testing.T) {
	const gib = 1024
	cases := []struct {
		name     string
		nodes    []*v4.Node
		tgs      []*v4.TaskGroup
		req      *Request
		strategy string
		want     []string // per instance
		reason   string   // a check of the plan reason, when instances stay unplaced
	}{
		{"binpack share goes to the fullest card", []*v4.Node{node("a", gpus(2, 40*gib, nil))},
			[]*v4.TaskGroup{gpuTG(1, "a", share("a", 1, 50, 8*gib))},
			gpuRequest(1, v4.GPURequest{Cores: 30, MemoryMiB: 4 * gib}), Binpack, []string{"a:1(30)"}, ""},
		{"spread share goes to the emptiest card", []*v4.Node{node("a", gpus(2, 40*gib, nil))},
			[]*v4.TaskGroup{gpuTG(1, "a", share("a", 0, 50, 8*gib))},
			gpuRequest(1, v4.GPURequest{Cores: 30, MemoryMiB: 4 * gib}), Spread, []string{"a:1(30)"}, ""},
		{"shares fill a card before the next", []*v4.Node{node("a", gpus(2, 40*gib, nil))}, nil,
			gpuRequest(4, v4.GPURequest{Cores: 40, MemoryMiB: 4 * gib}), Binpack, []string{"a:0(40)", "a:0(40)", "a:1(40)", "a:1(40)"}, ""},
		{"card memory bounds shares too", []*v4.Node{node("a", gpus(1, 16*gib, nil))}, nil,
			gpuRequest(3, v4.GPURequest{Cores: 10, MemoryMiB: 6 * gib}), Binpack, []string{"a:0(10)", "a:0(10)"},
			"no card with 10 free vcuda-core and 6 GiB"},
		{"more memory than any card has", []*v4.Node{node("a", gpus(2, 40*gib, nil))}, nil,
			gpuRequest(1, v4.GPURequest{Cores: 10, MemoryMiB: 80 * gib}), Binpack, nil, "no card has 80 GiB of memory"},
		{"a pair takes an NVLink pair", []*v4.Node{node("a", gpus(8, 40*gib, dgxLinks))},
			[]*v4.TaskGroup{gpuTG(1, "a", whole("a", 0, 40*gib))},
			gpuRequest(1, v4.GPURequest{Cards: 2}), Binpack, []string{"a:2(100),3(100)"}, ""},
		{"four cards take one switch", []*v4.Node{node("a", gpus(8, 40*gib, dgxLinks))},
			[]*v4.TaskGroup{gpuTG(1, "a", whole("a", 0, 40*gib))},
			gpuRequest(1, v4.GPURequest{Cards: 4}), Binpack, []string{"a:4(100),5(100),6(100),7(100)"}, ""},
		{"one card keeps NVLink pairs whole", []*v4.Node{node("a", gpus(8, 40*gib, dgxLinks))},
			[]*v4.TaskGroup{gpuTG(1, "a", whole("a", 2, 40*gib))},
			gpuRequest(1, v4.GPURequest{Cards: 1}), Binpack, []string{"a:3(100)"}, ""},
		{"a shared card is not whole", []*v4.Node{node("a", gpus(2, 40*gib, nil))},
			[]*v4.TaskGroup{gpuTG(1, "a", share("a", 0, 1, 256))},
			gpuRequest(2, v4.GPURequest{Cards: 1}), Binpack, []string{"a:1(100)"}, "no free whole GPU card"},
		{"two tasks share one card", []*v4.Node{node("a", gpus(2, 40*gib, nil))}, nil,
			gpuRequest(1, v4.GPURequest{Cores: 40, MemoryMiB: gib}, v4.GPURequest{Cores: 50, MemoryMiB: gib}), Binpack, []string{"a:0(50),0(40)"}, ""},
		{"two tasks too big for one card", []*v4.Node{node("a", gpus(2, 40*gib, nil))}, nil,
			gpuRequest(1, v4.GPURequest{Cores: 60, MemoryMiB: gib}, v4.GPURequest{Cores: 60, MemoryMiB: gib}), Binpack, []string{"a:0(60),1(60)"}, ""},
		{"whole cards and a share in one group", []*v4.Node{node("a", gpus(2, 40*gib, nil))}, nil,
			gpuRequest(1, v4.GPURequest{Cores: 60, MemoryMiB: gib}, v4.GPURequest{Cards: 1}), Binpack, []string{"a:0(100),1(60)"}, ""},
		{"binpack fills the busier node", []*v4.Node{node("a", gpus(2, 40*gib, nil)), node("b", gpus(2, 40*gib, nil))},
			[]*v4.TaskGroup{gpuTG(1, "b", share("b", 0, 20, gib))},
			gpuRequest(1, v4.GPURequest{Cores: 20, MemoryMiB: gib}), Binpack, []string{"b:0(20)"}, ""},
		{"spread levels the nodes", []*v4.Node{node("a", gpus(2, 40*gib, nil)), node("b", gpus(2, 40*gib, nil))},
			[]*v4.TaskGroup{gpuTG(1, "a", share("a", 0, 20, gib))},
			gpuRequest(2, v4.GPURequest{Cores: 20, MemoryMiB: gib}), Spread, []string{"b:0(20)", "a:1(20)"}, ""},
		{"a node without GPUs takes none", []*v4.Node{node("a")}, nil,
			gpuRequest(1, v4.GPURequest{Cores: 20, MemoryMiB: gib}), Binpack, nil, "no GPU inventory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := snapshotOf(c.nodes, c.tgs...)
			res := s.Place(c.req, Options{Strategy: c.strategy})
			if got := placedCards(res); !slices.Equal(got, c.want) {
				t.Fatalf("placed %q, want %q (reason %v)", got, c.want, res.Reason)
			}
			if c.reason == "" && len(res.Unplaced) > 0 {
				t.Fatalf("unplaced %v: %v", res.Unplaced, res.Reason)
			}
			if c.reason != "" && (res.Reason == nil || !strings.Contains(res.Reason.String(), c.reason)) {
				t.Fatalf("reason %v, want it to say %q", res.Reason, c.reason)
			}
		})
	}
}

func TestGPUHealthAndMIG(t *testing.T) {
	n := node("a", gpus(3, 40960, nil))
	n.Spec.GPUs[0].Unhealthy = "XID 79: fallen off the bus"
	n.Spec.GPUs[1].MIG = true
	s := snapshotOf([]*v4.Node{n})
	res := s.Clone().Place(gpuRequest(3, v4.GPURequest{Cores: 10, MemoryMiB: 1024}), Options{Strategy: Binpack})
	if got := placedCards(res); !slices.Equal(got, []string{"a:2(10)", "a:2(10)", "a:2(10)"}) {
		t.Fatalf("shares went to %q, want card 2 only (0 unhealthy, 1 in MIG mode)", got)
	}
	res = s.Clone().Place(gpuRequest(3, v4.GPURequest{Cards: 1}), Options{})
	if got := placedCards(res); !slices.Equal(got, []string{"a:1(100)", "a:2(100)"}) || res.Reason == nil || !strings.Contains(res.Reason.String(), "no free whole GPU card") {
		t.Fatalf("whole cards %q (%v), want MIG card 1 and card 2, then no free card", got, res.Reason)
	}
}

// TestGPUAccounting follows a node's cards through task groups coming and going, the
// node re-registering and a card lost and found again.
func TestGPUAccounting(t *testing.T) {
	n := node("a", gpus(2, 40960, nil))
	held := gpuTG(1, "a", share("a", 0, 60, 20480), share("a", 1, 100, 40960))
	s := snapshotOf([]*v4.Node{n}, held)
	used := func() string {
		var parts []string
		for _, u := range s.byName["a"].gpuUsed {
			parts = append(parts, fmt.Sprintf("%d/%d", u.cores, u.mem))
		}
		return strings.Join(parts, " ")
	}
	check := func(step, want string) {
		t.Helper()
		if got := used(); got != want {
			t.Fatalf("%s: cards used %q, want %q", step, got, want)
		}
	}
	check("placed", "60/20480 100/40960")
	s.SetNode(n)
	check("re-registered", "60/20480 100/40960")
	lost := node("a", gpus(1, 40960, nil))
	s.SetNode(lost)
	check("card 1 gone", "60/20480")
	s.SetNode(n)
	check("card 1 back", "60/20480 100/40960")
	c := s.Clone()
	c.RemoveTaskGroup(held.Metadata.Namespace, held.Metadata.Name)
	check("clone changed, original kept", "60/20480 100/40960")
	held.Status.Phase = v4.StatusFailed
	s.SetTaskGroup(held)
	check("task group ended", "0/0 0/0")
}

// TestGPULegacyCount: a node that declares "nvidia.com/gpu" without a card inventory
// still takes whole cards by count, as before cards were fingerprinted.
func TestGPULegacyCount(t *testing.T) {
	n := node("a", func(n *v4.Node) { n.Spec.Allocatable.Extended = map[string]float64{v4.ResourceGPU: 2} })
	req := gpuRequest(3, v4.GPURequest{Cards: 1})
	res := snapshotOf([]*v4.Node{n}).Place(req, Options{})
	if len(res.Placements) != 2 || len(res.Placements[0].GPUs) != 0 || res.Reason == nil || !strings.Contains(res.Reason.String(), "insufficient nvidia.com/gpu") {
		t.Fatalf("placed %q, reason %v; want 2 by count, without cards", placedCards(res), res.Reason)
	}
}

func TestChooseCardsGreedyMatchesExact(t *testing.T) {
	n := node("a", gpus(8, 1, dgxLinks))
	s := snapshotOf([]*v4.Node{n})
	cards := s.byName["a"].gpus
	used := make([]gpuUse, len(cards))
	free := []int{0, 1, 2, 3, 4, 5, 6, 7}
	for k := 2; k <= 7; k++ {
		exact, greedy := bestSetExact(cards, free, k), bestSetGreedy(cards, free, k)
		if costOf(cards, exact) != costOf(cards, greedy) {
			t.Fatalf("%d cards: exact %v (%v), greedy %v (%v)", k, exact, costOf(cards, exact), greedy, costOf(cards, greedy))
		}
		if got := chooseCards(cards, used, k); !slices.Equal(got, exact) {
			t.Fatalf("%d cards: chose %v, want %v", k, got, exact)
		}
	}
}
