package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

// Simulated nodes given cards register them as an agent with NVML would: the inventory
// with its links, each node's UUIDs its own, nvidia.com/gpu, the gpu.* attributes; and a
// task group given a whole card and a share of another runs on them.
func TestSimulatedNodesRegisterCards(t *testing.T) {
	url, token, _ := serve(t)
	cards, err := ParseGPUs("4:A100-40GB")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{ServerURLs: []string{url}, Token: token, Nodes: 2, Prefix: "g", DataDir: t.TempDir(),
		HeartbeatInterval: 200 * time.Millisecond, ReportInterval: time.Second,
		MinStartDelay: time.Millisecond, MaxStartDelay: 2 * time.Millisecond, Logger: storetest.QuietLogger(), GPUs: cards})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	nodes := store.Typed[*v4.Node](testStore, v4.KindNode)
	var list []*v4.Node
	waitFor(t, "both nodes with their cards", func() bool {
		list, _, err = nodes.List(context.Background(), "")
		if err != nil || len(list) != 2 {
			return false
		}
		for _, n := range list {
			if len(n.Spec.GPUs) != 4 {
				return false
			}
		}
		return true
	})
	for _, n := range list {
		sp := n.Spec
		g := sp.GPUs[1]
		if !strings.HasPrefix(g.UUID, "GPU-"+n.Metadata.Name+"-") || g.Model != "A100-40GB" || g.MemoryMiB != 40960 ||
			len(g.Links) != 3 || g.Links[0].UUID != sp.GPUs[0].UUID || g.Links[0].Level != v4.GPULinkNVLink ||
			sp.Capacity.Extended[v4.ResourceGPU] != 4 || sp.Attributes.Scalar["gpu.count"] != 4 ||
			sp.Attributes.Text["gpu.model"] != "A100-40GB" || sp.Attributes.Text["gpu.sharing"] != "none" {
			t.Errorf("node %s: %+v", n.Metadata.Name, sp)
		}
	}

	node := list[0]
	tgs := store.Typed[*v4.TaskGroup](testStore, v4.KindTaskGroup)
	tg := &v4.TaskGroup{
		TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
		Metadata: v4.ObjectMeta{Namespace: "ml", Name: "0.train.ml.c.1"},
		Spec: v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindApplication, Name: "train"}, Node: node.Metadata.Name,
			GPUs: []v4.TaskGPU{{Task: "train", UUID: node.Spec.GPUs[0].UUID, Index: 0, Cores: 100, MemoryMiB: 40960},
				{Task: "infer", UUID: node.Spec.GPUs[3].UUID, Index: 3, Cores: 30, MemoryMiB: 4096}},
			Template: v4.PodTemplate{Spec: v4.PodSpec{Processes: []v4.ProcessTask{
				{ProcName: "train", StartCmd: "./train", StartGracePeriod: 1}, {ProcName: "infer", StartCmd: "./infer", StartGracePeriod: 1}}}}},
	}
	if err := tgs.Create(context.Background(), tg, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the task group with cards Running", func() bool {
		got, err := tgs.Get(context.Background(), "ml", tg.Metadata.Name)
		return err == nil && got.Status.Phase == v4.StatusRunning && got.Status.GPUProblem == ""
	})
}
