package plugin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/berthhq/berth/internal/driver"
)

// maxAllocateItems bounds the env, mounts and devices one Allocate answer may give.
const maxAllocateItems = 256

// Allocation is what a plugin's Allocate answered for one task's devices.
type Allocation struct {
	Resource  string
	DeviceIDs []string
	Env       map[string]string
	Mounts    []driver.Mount
	Devices   []driver.Device
	// CDIDevices are fully qualified CDI device names, for a runtime that resolves them.
	CDIDevices []string
}

// Allocate gives task n devices of the resource: the ones it already holds (a restart),
// else free healthy ones, chosen by the plugin when it offers GetPreferredAllocation;
// then asks the plugin's Allocate (and PreStartContainer when it wants it) what the
// container needs.
func (m *Manager) Allocate(ctx context.Context, task, resource string, n int) (Allocation, error) {
	m.mu.Lock()
	p := m.plugins[resource]
	held := m.heldLocked(task, resource)
	m.mu.Unlock()
	if p == nil {
		return Allocation{}, fmt.Errorf("no device plugin serves %s on this node", resource)
	}
	ids := held
	if len(held) != n {
		m.Release(task, resource)
		free := m.freeDevices(p)
		if len(free) < n {
			return Allocation{}, fmt.Errorf("%s: %d devices asked, %d free and healthy", resource, n, len(free))
		}
		ids = free[:n]
		if p.opts.GetPreferredAllocationAvailable {
			ids = m.preferred(ctx, p, free, n)
		}
		if err := m.reserve(task, resource, ids); err != nil {
			return Allocation{}, err
		}
	}
	a, err := m.allocate(ctx, p, ids)
	if err != nil {
		m.Release(task, resource)
		return Allocation{}, err
	}
	return a, nil
}

// freeDevices are the plugin's healthy devices no task holds, sorted.
func (m *Manager) freeDevices(p *registered) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var free []string
	for id, health := range p.devices {
		if health == pluginapi.Healthy && m.allocated[p.resource][id] == "" {
			free = append(free, id)
		}
	}
	sort.Strings(free)
	return free
}

// preferred asks the plugin which of the free devices it would give; an answer that is
// not n of them falls back to the first n.
func (m *Manager) preferred(ctx context.Context, p *registered, free []string, n int) []string {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := p.client.GetPreferredAllocation(ctx, &pluginapi.PreferredAllocationRequest{
		ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{AvailableDeviceIDs: free, AllocationSize: int32(n)}},
	})
	if err != nil || len(resp.ContainerResponses) != 1 {
		m.log.Warn("device plugin: no preferred allocation; taking the first free devices", "resource", p.resource, "err", err)
		return free[:n]
	}
	ids := slices.Clone(resp.ContainerResponses[0].DeviceIDs)
	slices.Sort(ids)
	if len(ids) != n || len(slices.Compact(slices.Clone(ids))) != n || !isSubset(ids, free) {
		m.log.Warn("device plugin preferred devices that are not free; taking the first free devices", "resource", p.resource, "preferred", ids)
		return free[:n]
	}
	return ids
}

func isSubset(ids, of []string) bool {
	for _, id := range ids {
		if !slices.Contains(of, id) {
			return false
		}
	}
	return true
}

// reserve records ids as the task's, unless another task took one meanwhile.
func (m *Manager) reserve(task, resource string, ids []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	byID := m.allocated[resource]
	if byID == nil {
		byID = map[string]string{}
		m.allocated[resource] = byID
	}
	for _, id := range ids {
		if owner := byID[id]; owner != "" && owner != task {
			return fmt.Errorf("%s: device %s was just given to %s", resource, id, owner)
		}
	}
	for _, id := range ids {
		byID[id] = task
	}
	return nil
}

// allocate calls the plugin's Allocate (and PreStartContainer) for ids.
func (m *Manager) allocate(ctx context.Context, p *registered, ids []string) (Allocation, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := p.client.Allocate(ctx, &pluginapi.AllocateRequest{
		ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids}},
	})
	if err != nil {
		return Allocation{}, fmt.Errorf("%s: the device plugin's Allocate: %w", p.resource, err)
	}
	if len(resp.ContainerResponses) != 1 {
		return Allocation{}, fmt.Errorf("%s: the device plugin's Allocate answered %d containers for 1", p.resource, len(resp.ContainerResponses))
	}
	c := resp.ContainerResponses[0]
	if len(c.Envs)+len(c.Mounts)+len(c.Devices)+len(c.CdiDevices) > maxAllocateItems {
		return Allocation{}, fmt.Errorf("%s: the device plugin's Allocate answered more than %d env, mounts and devices", p.resource, maxAllocateItems)
	}
	a := Allocation{Resource: p.resource, DeviceIDs: ids, Env: maps.Clone(c.Envs)}
	for _, mt := range c.Mounts {
		a.Mounts = append(a.Mounts, driver.Mount{HostPath: mt.HostPath, ContainerPath: mt.ContainerPath, ReadOnly: mt.ReadOnly})
	}
	for _, d := range c.Devices {
		a.Devices = append(a.Devices, driver.Device{HostPath: d.HostPath, ContainerPath: d.ContainerPath, Permissions: d.Permissions})
	}
	for _, d := range c.CdiDevices {
		a.CDIDevices = append(a.CDIDevices, d.Name)
	}
	if p.opts.PreStartRequired {
		if _, err := p.client.PreStartContainer(ctx, &pluginapi.PreStartContainerRequest{DevicesIds: ids}); err != nil {
			return Allocation{}, fmt.Errorf("%s: the device plugin's PreStartContainer: %w", p.resource, err)
		}
	}
	return a, nil
}

// heldLocked returns the devices of the resource the task holds, sorted.
func (m *Manager) heldLocked(task, resource string) []string {
	var ids []string
	for id, owner := range m.allocated[resource] {
		if owner == task {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Held returns every device the task holds, by resource (the agent's checkpoint).
func (m *Manager) Held(task string) map[string][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]string{}
	for resource := range m.allocated {
		if ids := m.heldLocked(task, resource); len(ids) > 0 {
			out[resource] = ids
		}
	}
	return out
}

// Restore records devices a task held before the agent restarted.
func (m *Manager) Restore(task, resource string, ids []string) {
	if err := m.reserve(task, resource, ids); err != nil {
		m.log.Warn("device plugin: a restored allocation conflicts", "task", task, "err", err)
	}
}

// Release frees the task's devices of the resources given (all when none is given).
func (m *Manager) Release(task string, resources ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for resource, byID := range m.allocated {
		if len(resources) > 0 && !slices.Contains(resources, resource) {
			continue
		}
		for id, owner := range byID {
			if owner == task {
				delete(byID, id)
			}
		}
	}
}
