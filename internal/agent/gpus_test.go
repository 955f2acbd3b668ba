package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/devices/gpu"
	"github.com/berthhq/berth/internal/driver/fake"
	"github.com/berthhq/berth/internal/store"
)

// TestGPUsRegisteredAndWatched: the agent registers its cards with the node (inventory,
// nvidia.com/gpu, gpu.* attributes); a card that turns unhealthy is registered so and
// the task group holding it says so; a card that disappears too.
func TestGPUsRegisteredAndWatched(t *testing.T) {
	c := newCluster(t)
	cards := gpu.FakeCards("n", 4, "NVIDIA A100-SXM4-40GB", 40960)
	src := gpu.NewFake(cards)
	startAgent(t, c, t.TempDir(), fake.New("process"), func(cfg *Config) { cfg.GPUSource = src })
	var n *v4.Node
	waitFor(t, "the node with its cards", func() bool {
		var err error
		n, err = store.Typed[*v4.Node](testStore, v4.KindNode).Get(t.Context(), "", testNode)
		return err == nil && len(n.Spec.GPUs) == 4
	})
	s := n.Spec
	if s.Capacity.Extended[v4.ResourceGPU] != 4 || s.Allocatable.Extended[v4.ResourceGPU] != 4 ||
		s.Attributes.Scalar["gpu.count"] != 4 || s.Attributes.Text["gpu.model"] != "NVIDIA A100-SXM4-40GB" ||
		s.Attributes.Text["rack"] != "r1" || len(s.GPUs[0].Links) != 3 {
		t.Fatalf("node spec: %+v", s)
	}

	tg := processTG("0.gpu")
	tg.Spec.GPUs = []v4.TaskGPU{{Task: "web", UUID: cards[2].UUID, Index: 2, Cores: 30, MemoryMiB: 4096}}
	createTG(t, tg)
	waitPhase(t, tg.Metadata.Name, v4.StatusRunning)

	src.Fail(cards[2].UUID, "XID 79")
	waitFor(t, "the card registered unhealthy", func() bool {
		n, err := store.Typed[*v4.Node](testStore, v4.KindNode).Get(t.Context(), "", testNode)
		return err == nil && n.Spec.GPUs[2].Unhealthy == "XID 79" && n.Spec.Allocatable.Extended[v4.ResourceGPU] == 3
	})
	waitFor(t, "the task group marked", func() bool {
		got, err := tgs().Get(t.Context(), testNS, tg.Metadata.Name)
		return err == nil && strings.Contains(got.Status.GPUProblem, "GPU 2 ("+cards[2].UUID+") is unhealthy: XID 79")
	})
	if got, _ := tgs().Get(t.Context(), testNS, tg.Metadata.Name); got.Status.Phase != v4.StatusRunning {
		t.Fatalf("the task group was %s: it keeps running on a failed card", got.Status.Phase)
	}
}

// TestGPUSharesRestoredFromCheckpoint: an agent started on the checkpoint an earlier
// agent wrote serves again the vcuda sockets of the shares it records, and releasing a
// removed task group's share removes its files.
func TestGPUSharesRestoredFromCheckpoint(t *testing.T) {
	dir := t.TempDir()
	old := `{"version": 1, "node": "n", "taskGroups": {"ml/0.train": {"namespace": "ml", "name": "0.train",
		"podDir": "/pods/x", "since": "2026-01-01T00:00:00Z", "gpuSharing": "vcuda",
		"gpus": [{"task": "worker", "uuid": "GPU-a", "index": 0, "cores": 30, "memoryMiB": 4096},
			{"task": "whole", "uuid": "GPU-b", "index": 1, "cores": 100, "memoryMiB": 40960}]}}}`
	path := filepath.Join(dir, "checkpoint.json")
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	ckpt, err := loadCheckpoint(path, "n")
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{cfg: Config{DataDir: dir, GPUs: GPUOff, GPUSharing: GPUSharingVCUDA, VCUDADriverDir: t.TempDir()},
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), ckpt: ckpt}
	a.gpus = a.openGPUs()
	t.Cleanup(a.gpus.Close)
	shareDir := func(task string) string {
		sum := sha256.Sum256([]byte(task))
		return filepath.Join(dir, "vcuda", hex.EncodeToString(sum[:8]))
	}
	if fi, err := os.Stat(filepath.Join(shareDir("ml.0.train.worker"), "vcuda.sock")); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("the share's socket is not served again: %v", err)
	}
	if _, err := os.Stat(shareDir("ml.0.train.whole")); !os.IsNotExist(err) {
		t.Fatalf("a whole card has no share to serve: %v", err)
	}
	e, _ := ckpt.get("ml/0.train")
	a.releaseGPUs(e)
	if _, err := os.Stat(shareDir("ml.0.train.worker")); !os.IsNotExist(err) {
		t.Fatalf("the released share's files stay: %v", err)
	}
}
