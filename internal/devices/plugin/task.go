package plugin

import (
	"context"
	"maps"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// Describe adds the plugins' resources to the node the agent registers: every device
// to its capacity, the healthy ones to what it can allocate.
func (m *Manager) Describe(n *v4.Node) {
	capacity, allocatable := m.Resources()
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

// TaskDevices are what a task's devices of every plugin need: env (set over the spec's),
// mounts, device nodes and CDI devices, in the driver's terms.
type TaskDevices struct {
	Env        map[string]string
	Mounts     []driver.Mount
	Devices    []driver.Device
	CDIDevices []string
}

// AllocateTask gives a task of a task group (group is its namespace/name) its devices of
// each resource it asks for, by name and count, in the order of the names; a resource no
// plugin serves is skipped (a counted resource the operator declared, not a plugin's).
// What the task then holds goes to Options.Held when it changed (a task started again
// keeps the devices it held, and its checkpoint is not written again).
func (m *Manager) AllocateTask(ctx context.Context, group, task string, asks map[string]int) (TaskDevices, error) {
	var out TaskDevices
	before := m.Held(task)
	for _, resource := range slices.Sorted(maps.Keys(asks)) {
		if !m.Has(resource) {
			continue
		}
		a, err := m.Allocate(ctx, task, resource, asks[resource])
		if err != nil {
			return out, err
		}
		if out.Env == nil {
			out.Env = map[string]string{}
		}
		maps.Copy(out.Env, a.Env)
		out.Mounts = append(out.Mounts, a.Mounts...)
		out.Devices = append(out.Devices, a.Devices...)
		out.CDIDevices = append(out.CDIDevices, a.CDIDevices...)
	}
	if after := m.Held(task); m.held != nil && !maps.EqualFunc(before, after, slices.Equal) {
		m.held(group, task, after)
	}
	return out, nil
}
