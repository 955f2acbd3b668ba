package executor

import (
	"context"
	"slices"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/devices/gpu"
	"github.com/berthhq/berth/internal/driver"
)

// testCards is a node's cards for the executor.
type testCards []v4.NodeGPU

func (c testCards) Card(uuid string) (v4.NodeGPU, bool) {
	i := slices.IndexFunc(c, func(g v4.NodeGPU) bool { return g.UUID == uuid })
	if i < 0 {
		return v4.NodeGPU{}, false
	}
	return c[i], true
}

func (c testCards) Any() bool { return len(c) > 0 }

// Share sets up nothing, as the none sharing mode does.
func (testCards) Share(context.Context, gpu.ShareRequest) (gpu.ShareSetup, error) {
	return gpu.ShareSetup{}, nil
}

// sharingCards are cards whose shares are set up by share.
type sharingCards struct {
	testCards
	share func(context.Context, gpu.ShareRequest) (gpu.ShareSetup, error)
}

func (c sharingCards) Share(ctx context.Context, req gpu.ShareRequest) (gpu.ShareSetup, error) {
	return c.share(ctx, req)
}

func gpuEnvValue(env []string, name string) (string, int) {
	var val string
	n := 0
	for _, e := range env {
		if k, v, _ := strings.Cut(e, "="); k == name {
			val, n = v, n+1
		}
	}
	return val, n
}

// TestGPUTasks: a task's cards reach the driver with their device minor and NUMA node,
// its env names them by UUID over the spec's own values, a task without cards on a GPU
// node sees none, and a card the node lacks fails the pod.
func TestGPUTasks(t *testing.T) {
	cards := testCards{
		{UUID: "GPU-a", Index: 0, Minor: 4, NUMANode: 1, MemoryMiB: 40960},
		{UUID: "GPU-b", Index: 1, Minor: 5, NUMANode: 1, MemoryMiB: 40960},
	}
	h := newHarness(t, func(c *Config) { c.GPUs = cards })
	tg := containerTG("0.gpu", "train", "sidecar")
	tg.Spec.Template.Spec.Containers[0].Env = []v4.EnvVar{{Name: "CUDA_VISIBLE_DEVICES", Value: "all"}, {Name: "KEEP", Value: "1"}}
	tg.Spec.GPUs = []v4.TaskGPU{{Task: "train", UUID: "GPU-b", Index: 1, Cores: 30, MemoryMiB: 4096}}
	h.run(tg)
	h.rec.waitPhase(t, "0.gpu", v4.StatusRunning)
	train, _ := h.docker.Task(id("0.gpu", "train"))
	if len(train.GPUs) != 1 || train.GPUs[0].Minor != 5 || train.GPUs[0].NUMANode != 1 || train.GPUs[0].Cores != 30 || train.GPUs[0].MemoryMiB != 4096 {
		t.Fatalf("driver GPUs %+v", train.GPUs)
	}
	for name, want := range map[string]string{"CUDA_VISIBLE_DEVICES": "GPU-b", "NVIDIA_VISIBLE_DEVICES": "GPU-b", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility", "KEEP": "1"} {
		if got, n := gpuEnvValue(train.Env, name); got != want || n != 1 {
			t.Errorf("train: %s=%q (%d times), want %q once", name, got, n, want)
		}
	}
	side, _ := h.docker.Task(id("0.gpu", "sidecar"))
	if got, _ := gpuEnvValue(side.Env, "NVIDIA_VISIBLE_DEVICES"); got != "void" || len(side.GPUs) != 0 {
		t.Errorf("a container without cards: NVIDIA_VISIBLE_DEVICES=%q, GPUs %v", got, side.GPUs)
	}
	if got, n := gpuEnvValue(side.Env, "CUDA_VISIBLE_DEVICES"); got != "" || n != 1 {
		t.Errorf("a container without cards: CUDA_VISIBLE_DEVICES=%q (%d)", got, n)
	}

	proc := processTG("1.gpu", v4.ProcessTask{ProcName: "infer", StartCmd: "./infer"})
	proc.Spec.GPUs = []v4.TaskGPU{{Task: "infer", UUID: "GPU-a", Index: 0, Cores: 100, MemoryMiB: 40960}, {Task: "infer", UUID: "GPU-b", Index: 1, Cores: 100, MemoryMiB: 40960}}
	h.run(proc)
	h.rec.waitPhase(t, "1.gpu", v4.StatusRunning)
	infer, _ := h.proc.Task(id("1.gpu", "infer"))
	if got, _ := gpuEnvValue(infer.Env, "CUDA_VISIBLE_DEVICES"); got != "GPU-a,GPU-b" {
		t.Errorf("process: CUDA_VISIBLE_DEVICES=%q", got)
	}
	if _, n := gpuEnvValue(infer.Env, "NVIDIA_VISIBLE_DEVICES"); n != 0 {
		t.Errorf("process: NVIDIA_VISIBLE_DEVICES set")
	}

	gone := processTG("2.gpu", v4.ProcessTask{ProcName: "infer", StartCmd: "./infer"})
	gone.Spec.GPUs = []v4.TaskGPU{{Task: "infer", UUID: "GPU-z", Index: 7, Cores: 50, MemoryMiB: 1024}}
	h.run(gone)
	st := h.rec.waitPhase(t, "2.gpu", v4.StatusFailed)
	if !strings.Contains(st.Message, "card GPU-z (index 7) is not on this node") {
		t.Fatalf("message %q", st.Message)
	}
}

// TestNoGPUEnvWithoutCards: a node without cards leaves the env alone.
func TestNoGPUEnvWithoutCards(t *testing.T) {
	h := newHarness(t)
	h.run(processTG("0.plain", v4.ProcessTask{ProcName: "web", StartCmd: "./web"}))
	h.rec.waitPhase(t, "0.plain", v4.StatusRunning)
	task, _ := h.proc.Task(id("0.plain", "web"))
	if _, n := gpuEnvValue(task.Env, "CUDA_VISIBLE_DEVICES"); n != 0 {
		t.Fatalf("CUDA_VISIBLE_DEVICES set on a node without cards: %v", task.Env)
	}
}

// TestGPUShareSetup: a share's setup from the node's sharing mode reaches the driver, its
// env over the spec's; whole cards have no share to set up.
func TestGPUShareSetup(t *testing.T) {
	cards := testCards{{UUID: "GPU-a", Index: 0, Minor: 0, NUMANode: 0, MemoryMiB: 40960}, {UUID: "GPU-b", Index: 1, Minor: 1, NUMANode: 0, MemoryMiB: 40960}}
	var asked []string
	h := newHarness(t, func(c *Config) {
		c.GPUs = sharingCards{testCards: cards, share: func(_ context.Context, req gpu.ShareRequest) (gpu.ShareSetup, error) {
			asked = append(asked, req.Namespace+"/"+req.Name+" "+req.Task.Name)
			return gpu.ShareSetup{Env: [][2]string{{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "30"}},
				Mounts: []driver.Mount{{HostPath: "/mps/pipe", ContainerPath: "/mps/pipe"}}, IPCHost: true,
				Owned: []string{"/mps/pipe/sock"}}, nil
		}}
	})
	tg := containerTG("0.share", "worker", "trainer")
	tg.Spec.Template.Spec.Containers[0].Env = []v4.EnvVar{{Name: "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", Value: "100"}}
	tg.Spec.GPUs = []v4.TaskGPU{{Task: "worker", UUID: "GPU-a", Cores: 30, MemoryMiB: 4096}, {Task: "trainer", UUID: "GPU-b", Cores: 100, MemoryMiB: 40960}}
	h.run(tg)
	h.rec.waitPhase(t, "0.share", v4.StatusRunning)
	worker, _ := h.docker.Task(id("0.share", "worker"))
	if got, n := gpuEnvValue(worker.Env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"); got != "30" || n != 1 {
		t.Errorf("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%q (%d times), want the share's 30 once", got, n)
	}
	if !worker.Setup.IPCHost || !slices.Contains(worker.Setup.Volumes, driver.Mount{HostPath: "/mps/pipe", ContainerPath: "/mps/pipe"}) {
		t.Errorf("worker: IPCHost %v, volumes %v", worker.Setup.IPCHost, worker.Setup.Volumes)
	}
	if !slices.Equal(worker.Setup.OwnedFiles, []string{"/mps/pipe/sock"}) { // given to the container's user
		t.Errorf("worker: owned files %v", worker.Setup.OwnedFiles)
	}
	if len(asked) != 1 || asked[0] != testNS+"/0.share worker" {
		t.Errorf("shares set up: %q, want the worker's only", asked)
	}
}
