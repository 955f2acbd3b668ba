package executor

import (
	"context"
	"fmt"
	"maps"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// DeviceRequest is one task and the device-plugin resources it asks for, by name.
type DeviceRequest struct {
	Namespace, Name string // the task group
	Task            *driver.Task
	Resources       map[string]int
}

// DeviceSetup is what the task's devices need: env (set over the spec's), mounts, device
// nodes and CDI devices.
type DeviceSetup struct {
	Env        map[string]string
	Mounts     []driver.Mount
	Devices    []driver.Device
	CDIDevices []string
}

// pluginDevices gives the task the devices of its extended resources, when the node has
// device plugins; it returns their env.
func (p *pod) pluginDevices(ctx context.Context, t *driver.Task, res *v4.Resources) ([]envVar, error) {
	if p.e.cfg.PluginDevices == nil || res == nil {
		return nil, nil
	}
	asks := map[string]int{}
	for _, e := range res.ExtendedResources {
		switch e.Name {
		case v4.ResourceGPU, v4.ResourceVCUDACore, v4.ResourceVCUDAMemory:
			continue // the node's own cards
		}
		if n := int(e.Value); n > 0 {
			asks[e.Name] += n
		}
	}
	if len(asks) == 0 {
		return nil, nil
	}
	setup, err := p.e.cfg.PluginDevices(ctx, DeviceRequest{Namespace: p.ns, Name: p.name, Task: t, Resources: asks})
	if err != nil {
		return nil, fmt.Errorf("devices: %w", err)
	}
	t.Volumes = append(t.Volumes, setup.Mounts...)
	t.Devices = append(t.Devices, setup.Devices...)
	t.CDIDevices = append(t.CDIDevices, setup.CDIDevices...)
	env := make([]envVar, 0, len(setup.Env))
	for _, k := range sortedKeys(setup.Env) {
		env = append(env, envVar{k, setup.Env[k]})
	}
	return env, nil
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
