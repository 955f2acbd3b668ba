package process

import (
	"fmt"

	"github.com/berthhq/berth/internal/driver"
)

// Ownership (docs/agent.md, "Ownership"). A task's state lives in its agent's data dir,
// so agents with data dirs of their own never see each other's tasks; but a data dir may
// pass to an agent of another cluster (the machine joined another cluster with the same
// --data-dir), and the cgroups are the machine's. So every task is labelled with the
// owner's cluster, its cgroup is named after the cluster (cgroupPath), and the driver
// inspects, stops, signals and removes only its owner's tasks: another's state is left
// as it is, its processes running, its uid still taken.

// load reads one task's state when it is the owner's; driver.ErrNotFound (wrapped) when
// the driver has none or it is another cluster's or node's (driver.Owner.Owns: an older
// task without a cluster label is the owner's when it names the owner's node).
func (d *Driver) load(id string) (*taskState, error) {
	st, err := d.read(id)
	if err != nil {
		return nil, err
	}
	if !d.owner.Owns(st.Labels) {
		return nil, fmt.Errorf("task %q: recorded by the agent of another berth cluster (%s) or node (%s): %w",
			id, orNone(st.Labels[driver.LabelCluster]), orNone(st.Labels[driver.LabelNode]), driver.ErrNotFound)
	}
	return st, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
