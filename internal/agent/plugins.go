package agent

import (
	"context"
	"log/slog"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/devices/plugin"
)

// Device plugins (docs/gpus.md, "Device plugins"): the agent serves kubelet's
// Registration API; each registered plugin's devices are an extended resource of the
// node (capacity: all, allocatable: the healthy ones); a task asking for one gets the
// devices its plugin's Allocate answers, recorded in the checkpoint until the task group
// is removed.

// openPlugins makes the device plugin manager when a directory is configured.
func (a *Agent) openPlugins() {
	if a.cfg.DevicePluginDir == "" {
		return
	}
	reserved := func(resource string) bool { return isGPUResourceName(resource) && a.gpus.Any() }
	held := func(group, task string, held map[string][]string) {
		if err := a.ckpt.setDevices(group, task, held); err != nil {
			a.log.Error("cannot write the checkpoint", "err", err)
		}
	}
	a.plugins = plugin.NewManager(plugin.Options{Dir: a.cfg.DevicePluginDir, Reserved: reserved, Changed: a.nodeChanged,
		Held: held, Logger: slog.New(a.log.Handler())})
	for _, key := range a.ckpt.keys() { // what tasks held before a restart stays theirs
		e, _ := a.ckpt.get(key)
		for task, byResource := range e.Devices {
			for resource, ids := range byResource {
				a.plugins.Restore(task, resource, ids)
			}
		}
	}
}

// runPlugins serves the plugins' registrations until ctx ends.
func (a *Agent) runPlugins(ctx context.Context) {
	if a.plugins == nil {
		return
	}
	if err := a.plugins.Run(ctx); err != nil {
		a.log.Error("cannot serve device plugins", "err", err)
	}
}

func isGPUResourceName(name string) bool {
	switch name {
	case v4.ResourceGPU, v4.ResourceVCUDACore, v4.ResourceVCUDAMemory:
		return true
	}
	return false
}

// releaseDevices frees the devices of a removed task group's tasks.
func (a *Agent) releaseDevices(e checkpointEntry) {
	if a.plugins == nil {
		return
	}
	for task := range e.Devices {
		a.plugins.Release(task)
	}
}
