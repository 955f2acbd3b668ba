package executor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/devices/gpu"
	"github.com/berthhq/berth/internal/driver"
)

// GPUs are the node's cards and the shares of them the node enforces
// (devices/gpu.Manager).
type GPUs interface {
	// Card returns the card with the UUID.
	Card(uuid string) (v4.NodeGPU, bool)
	// Any reports whether the node has cards at all.
	Any() bool
	// Share sets up one task's share of its card.
	Share(ctx context.Context, req gpu.ShareRequest) (gpu.ShareSetup, error)
}

// taskGPUs looks up the cards the scheduler gave one task. A card the node does not have
// (any more) fails the task: running it on another card would break the share.
func (e *Executor) taskGPUs(held []v4.TaskGPU) ([]driver.GPU, error) {
	if len(held) == 0 {
		return nil, nil
	}
	if e.cfg.GPUs == nil {
		return nil, fmt.Errorf("GPUs: this node reports no cards, the task was given %s", held[0].UUID)
	}
	out := make([]driver.GPU, 0, len(held))
	for _, h := range held {
		c, ok := e.cfg.GPUs.Card(h.UUID)
		if !ok {
			return nil, fmt.Errorf("GPUs: card %s (index %d) is not on this node", h.UUID, h.Index)
		}
		out = append(out, driver.GPU{UUID: c.UUID, Index: c.Index, Minor: c.Minor, NUMANode: c.NUMANode, Cores: h.Cores, MemoryMiB: h.MemoryMiB})
	}
	return out, nil
}

// shareCard enforces the task's share of a card, when it has one and the node enforces
// shares; it returns the share's env.
func (p *pod) shareCard(ctx context.Context, t *driver.Task) ([]envVar, error) {
	if len(t.GPUs) != 1 || t.GPUs[0].Cores >= v4.CoresPerGPU || p.e.cfg.GPUs == nil {
		return nil, nil
	}
	setup, err := p.e.cfg.GPUs.Share(ctx, gpu.ShareRequest{Namespace: p.ns, Name: p.name, Task: t})
	if err != nil {
		return nil, fmt.Errorf("share of GPU %s: %w", t.GPUs[0].UUID, err)
	}
	if c := t.Setup; c != nil { // a process's share is its env alone
		c.Volumes = append(c.Volumes, setup.Mounts...)
		c.OwnedFiles = append(c.OwnedFiles, setup.Owned...)
		c.IPCHost = c.IPCHost || setup.IPCHost
		c.GPUDriverDir = setup.DriverDir
	}
	env := make([]envVar, len(setup.Env))
	for i, e := range setup.Env {
		env[i] = envVar{e[0], e[1]}
	}
	return env, nil
}

// gpusOf returns the cards the task group gives the task.
func gpusOf(tg *v4.TaskGroup, task string) []v4.TaskGPU {
	var out []v4.TaskGPU
	for _, g := range tg.Spec.GPUs {
		if g.Task == task {
			out = append(out, g)
		}
	}
	return out
}

// gpuEnv says which cards a task may use, after its own env so the spec cannot widen it:
// NVIDIA_VISIBLE_DEVICES (read by the NVIDIA container toolkit) for containers and
// CUDA_VISIBLE_DEVICES for every task, by UUID, which does not depend on how CUDA orders
// the cards. On a node with cards, a task given none gets "void" and "": a CUDA image run
// by a toolkit that is Docker's default runtime would otherwise see every card.
func gpuEnv(container bool, gpus []driver.GPU) []envVar {
	uuids := make([]string, len(gpus))
	for i, g := range gpus {
		uuids[i] = g.UUID
	}
	visible := strings.Join(uuids, ",")
	var env []envVar
	if container {
		nv := visible
		if nv == "" {
			nv = "void"
		}
		env = append(env, envVar{"NVIDIA_VISIBLE_DEVICES", nv})
		if len(gpus) > 0 {
			env = append(env, envVar{"NVIDIA_DRIVER_CAPABILITIES", "compute,utility"})
		}
	}
	return append(env, envVar{"CUDA_VISIBLE_DEVICES", visible})
}

// withGPUEnv replaces the spec's own values of the variables of the task's cards and
// devices with berth's: a duplicate name would leave the choice to the C library (getenv
// takes the first).
func withGPUEnv(env, gpu []envVar) []envVar {
	out := env[:0:0]
	for _, v := range env {
		if !slices.ContainsFunc(gpu, func(g envVar) bool { return g.name == v.name }) {
			out = append(out, v)
		}
	}
	return append(out, gpu...)
}
