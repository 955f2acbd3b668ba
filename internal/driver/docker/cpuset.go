package docker

import (
	"context"

	"github.com/moby/moby/api/types/container"

	"github.com/berthhq/berth/internal/driver/cpubind"
)

// cpuRequest is what a task's parameters ask of the CPU binding (cpubind).
func cpuRequest(x paramExtras, request float64, preferNUMA int) cpubind.Request {
	return cpubind.Request{Bind: x.cpusetBind, CPUs: x.cpusetCPUs, Mems: x.cpusetMems, CPURequest: request, PreferNUMA: preferNUMA}
}

// resolveCPUSet decides a task's binding by cpubind's rules, the CPUs already bound
// read from Docker's labels. The caller holds cpusetMu until the container exists, so
// the free CPUs it saw are still free.
func (d *Driver) resolveCPUSet(ctx context.Context, r cpubind.Request) (cpubind.Binding, error) {
	return cpubind.Resolve(d.sysfs, r, func() (map[int]bool, error) { return d.boundCPUs(ctx) })
}

// boundCPUs is every CPU that a berth container which has not ended is bound to,
// read from their labels: Docker is the only record, so it survives agent restarts.
func (d *Driver) boundCPUs(ctx context.Context) (map[int]bool, error) {
	list, err := d.listLabelled(ctx, d.cpusetLabel)
	if err != nil {
		return nil, d.wrap(err, "cpuset: list bound containers")
	}
	bound := map[int]bool{}
	for _, c := range list {
		if c.State == container.StateExited || c.State == container.StateDead {
			continue
		}
		cpus, _ := cpubind.ParseList(c.Labels[d.cpusetLabel])
		for _, cpu := range cpus {
			bound[cpu] = true
		}
	}
	return bound, nil
}
