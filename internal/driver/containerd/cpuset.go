package containerd

import (
	"context"
	"fmt"

	client "github.com/containerd/containerd/v2/client"
	cerrdefs "github.com/containerd/errdefs"

	"github.com/berthhq/berth/internal/driver/cpubind"
)

// labelCPUSet records the CPUs a container is bound to (cpuset parameters), so that the
// next binding leaves them to it while its task runs: containerd is the only record,
// so it survives agent restarts. Every owner's count: CPUs are the machine's.
const labelCPUSet = "berth.containerd.cpuset"

// boundCPUs is every CPU that a container in the namespace whose task has not ended is
// bound to.
func (d *Driver) boundCPUs(ctx context.Context) (map[int]bool, error) {
	cs, err := d.cli.Containers(ctx, fmt.Sprintf("labels.%q", labelCPUSet))
	if err != nil {
		return nil, d.wrap(err, "cpuset: list bound containers")
	}
	bound := map[int]bool{}
	for _, c := range cs {
		labels, err := c.Labels(ctx)
		if err != nil {
			continue // removed meanwhile
		}
		if holds, err := holdsCPUs(ctx, c, labels); err != nil || !holds {
			continue
		}
		cpus, _ := cpubind.ParseList(labels[labelCPUSet])
		for _, cpu := range cpus {
			bound[cpu] = true
		}
	}
	return bound, nil
}

// holdsCPUs reports whether c still holds its CPUs: its task has not ended, or it has
// none yet because its Start is under way (not started, no failure recorded).
func holdsCPUs(ctx context.Context, c client.Container, labels map[string]string) (bool, error) {
	task, err := c.Task(ctx, nil)
	if cerrdefs.IsNotFound(err) {
		return labels[labelStarted] == "" && labels[labelError] == "", nil
	}
	if err != nil {
		return false, err
	}
	st, err := task.Status(ctx)
	if err != nil {
		return false, err
	}
	return st.Status != client.Stopped, nil
}

// bindCPUs resolves the task's CPU binding (cpubind's rules, the CPUs bound read from
// containerd). The caller holds cpusetMu from
// here until the container exists when r binds CPUs.
func (d *Driver) bindCPUs(ctx context.Context, id string, r cpubind.Request) (cpubind.Binding, error) {
	b, err := cpubind.Resolve(d.sysfs, r, func() (map[int]bool, error) { return d.boundCPUs(ctx) })
	if err != nil {
		return b, err
	}
	if b.CPUs != "" {
		d.log.Info("binding cpus", "task", id, "cpus", b.CPUs, "mems", b.Mems)
	}
	return b, nil
}
