package agent

import (
	"context"
	"log/slog"
	"maps"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/devices/plugin"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/executor"
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
	a.plugins = plugin.NewManager(a.cfg.DevicePluginDir, reserved, a.nodeChanged, slog.New(a.log.Handler()))
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

// describePlugins adds the plugins' resources to the node.
func (a *Agent) describePlugins(n *v4.Node) {
	if a.plugins == nil {
		return
	}
	capacity, allocatable := a.plugins.Resources()
	for _, r := range []struct {
		res  *v4.NodeResources
		from map[string]float64
	}{{&n.Spec.Capacity, capacity}, {&n.Spec.Allocatable, allocatable}} {
		if len(r.from) == 0 {
			continue
		}
		if r.res.Extended == nil {
			r.res.Extended = map[string]float64{}
		}
		maps.Copy(r.res.Extended, r.from)
	}
}

// pluginDevices gives a task its devices (executor.Config.PluginDevices).
func (a *Agent) pluginDevices(ctx context.Context, req executor.DeviceRequest) (executor.DeviceSetup, error) {
	var setup executor.DeviceSetup
	if a.plugins == nil {
		for name := range req.Resources {
			a.log.Warn("a task asks for a resource no device plugin serves here (no --device-plugin-dir)", "task", req.Task.ID, "resource", name)
		}
		return setup, nil
	}
	for _, resource := range sortedResourceNames(req.Resources) {
		if !a.plugins.Has(resource) {
			continue // a counted resource the operator declared, not a plugin's
		}
		alloc, err := a.plugins.Allocate(ctx, req.Task.ID, resource, req.Resources[resource])
		if err != nil {
			return setup, err
		}
		if setup.Env == nil {
			setup.Env = map[string]string{}
		}
		maps.Copy(setup.Env, alloc.Env)
		for _, m := range alloc.Mounts {
			setup.Mounts = append(setup.Mounts, driverMount(m))
		}
		for _, d := range alloc.Devices {
			setup.Devices = append(setup.Devices, driverDevice(d))
		}
		setup.CDIDevices = append(setup.CDIDevices, alloc.CDIDevices...)
	}
	if err := a.ckpt.setDevices(tgKey(req.Namespace, req.Name), req.Task.ID, a.plugins.Held(req.Task.ID)); err != nil {
		a.log.Error("cannot write the checkpoint", "err", err)
	}
	return setup, nil
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

func sortedResourceNames(m map[string]int) []string { return slices.Sorted(maps.Keys(m)) }

func driverMount(m plugin.Mount) driver.Mount {
	return driver.Mount{HostPath: m.HostPath, ContainerPath: m.ContainerPath, ReadOnly: m.ReadOnly}
}

func driverDevice(d plugin.DeviceSpec) driver.Device {
	return driver.Device{HostPath: d.HostPath, ContainerPath: d.ContainerPath, Permissions: d.Permissions}
}
