package gpu

import (
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestGPUProblems(t *testing.T) {
	cards := FakeCards("n", 2, "T4", 16384)
	inv := &Manager{unhealthy: map[string]string{}, cards: cards[:1]}
	tg := &v4.TaskGroup{}
	tg.Spec.GPUs = []v4.TaskGPU{{Task: "a", UUID: cards[0].UUID, Index: 0, Cores: 100}, {Task: "b", UUID: cards[1].UUID, Index: 1, Cores: 100}}
	if got, want := inv.Problem(tg), "GPU 1 (GPU-n-1) is gone from the node"; got != want {
		t.Fatalf("problem %q, want %q", got, want)
	}
	inv.markUnhealthy(cards[0].UUID, "XID 48")
	if got, want := inv.Problem(tg), "GPU 0 (GPU-n-0) is unhealthy: XID 48; GPU 1 (GPU-n-1) is gone from the node"; got != want {
		t.Fatalf("problem %q, want %q", got, want)
	}
	if inv.markUnhealthy(cards[0].UUID, "XID 79") {
		t.Fatal("a card marked twice is news")
	}
	n := &v4.Node{}
	inv.cards = []v4.NodeGPU{cards[0], {UUID: "GPU-x", Index: 1, Model: "A10", MemoryMiB: 1}}
	inv.Describe(n)
	if n.Spec.Attributes.Text["gpu.model"] != "" || strings.Join(n.Spec.Attributes.Set["gpu.models"], ",") != "A10,T4" ||
		n.Spec.Allocatable.Extended[v4.ResourceGPU] != 1 || n.Spec.Capacity.Extended[v4.ResourceGPU] != 2 {
		t.Fatalf("mixed models: %+v", n.Spec)
	}
}
