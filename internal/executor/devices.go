package executor

import (
	"context"
	"fmt"
	"maps"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/devices/plugin"
	"github.com/berthhq/berth/internal/driver"
)

// Devices are the node's device plugins (devices/plugin.Manager).
type Devices interface {
	// AllocateTask gives a task of a task group (group: namespace/name) its devices of
	// the resources it asks for, by name and count.
	AllocateTask(ctx context.Context, group, task string, asks map[string]int) (plugin.TaskDevices, error)
}

// pluginDevices gives the task the devices of its extended resources, when the node has
// device plugins; it returns their env.
func (p *pod) pluginDevices(ctx context.Context, t *driver.Task, res *v4.Resources) ([]envVar, error) {
	if res == nil {
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
	if p.e.cfg.Devices == nil {
		for _, name := range slices.Sorted(maps.Keys(asks)) {
			p.e.log.Warn("a task asks for a resource no device plugin serves here (no --device-plugin-dir)", "task", t.ID, "resource", name)
		}
		return nil, nil
	}
	setup, err := p.e.cfg.Devices.AllocateTask(ctx, podKey(p.ns, p.name), t.ID, asks)
	if err != nil {
		return nil, fmt.Errorf("devices: %w", err)
	}
	if c := t.Setup; c != nil { // a process gets the env alone
		c.Volumes = append(c.Volumes, setup.Mounts...)
		c.Devices = append(c.Devices, setup.Devices...)
		c.CDIDevices = append(c.CDIDevices, setup.CDIDevices...)
	}
	env := make([]envVar, 0, len(setup.Env))
	for _, k := range sortedKeys(setup.Env) {
		env = append(env, envVar{k, setup.Env[k]})
	}
	return env, nil
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
