package docker

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"

	"github.com/berthhq/berth/internal/driver"
)

// Ownership (docs/agent.md, "Ownership"). One Docker daemon may serve several clusters'
// agents (two `berth dev`s, a dev cluster beside a real agent), whose task IDs are alike
// ("{namespace}.{name}.{task}") and whose node names may be too. So a driver with an
// owner's cluster names its containers berth-<cluster tag>_<task id> (sandboxes
// berth-<cluster tag>_pod-<pod id>), labels them with the cluster, and finds a task only
// by that name: another cluster's container of the same task is never inspected,
// stopped or removed. Containers started before containers carried their cluster
// (berth-<task id>, no cluster label) are still found, but only when the owner owns them
// (driver.Owner.Owns: they name the owner's node), so an upgraded agent adopts and stops
// what it started before the upgrade.

// name is the Docker name the driver gives task id's container.
func (d *Driver) name(id string) string { return d.prefix + id }

// sandboxName is the Docker name the driver gives a pod's CNI sandbox.
func (d *Driver) sandboxName(podID string) string { return d.name("pod-" + podID) }

// tagged reports whether the driver's names carry a cluster tag, so that an untagged
// (older) name may be one of its own too.
func (d *Driver) tagged() bool { return d.prefix != containerName("") }

// owns reports whether the container is the driver's owner's.
func (d *Driver) owns(c container.InspectResponse) bool {
	return c.Config != nil && d.owner.Owns(c.Config.Labels)
}

// notOwned is the error for a container that is there but another cluster's or node's:
// to the driver it does not exist.
func notOwned(ref string) error {
	return fmt.Errorf("container %s belongs to another berth cluster or node: %w", ref, driver.ErrNotFound)
}

// find inspects task id's container: the one of the driver's name, else an older one of
// the untagged name that the owner owns. Errors are wrapped with the task; neither is
// driver.ErrNotFound.
func (d *Driver) find(ctx context.Context, id string) (container.InspectResponse, error) {
	c, err := d.inspect(ctx, d.name(id))
	switch {
	case err == nil && d.owns(c):
		return c, nil
	case err == nil:
		return container.InspectResponse{}, fmt.Errorf("inspect task %s: %w", id, notOwned(d.name(id)))
	case cerrdefs.IsNotFound(err) && d.tagged():
		return d.legacy(ctx, containerName(id), id, LabelID)
	}
	return container.InspectResponse{}, d.wrap(err, "inspect task %s", id)
}

// legacy inspects the untagged container ref and returns it when it is berth's task
// or sandbox id (label, LabelID or LabelPod, names id), carries no cluster, and the owner
// owns it.
func (d *Driver) legacy(ctx context.Context, ref, id, label string) (container.InspectResponse, error) {
	c, err := d.inspect(ctx, ref)
	if err != nil {
		return container.InspectResponse{}, d.wrap(err, "inspect %s", id)
	}
	if c.Config == nil || c.Config.Labels[label] != id || c.Config.Labels[driver.LabelCluster] != "" || !d.owns(c) {
		return container.InspectResponse{}, fmt.Errorf("inspect %s: %w", id, notOwned(ref))
	}
	return c, nil
}

// withContainer calls op with the driver's name of task id's container and, when Docker
// knows no container of that name, with the ID of an older one the owner owns (find's
// rule): the common case costs no inspect. The first answer's error is returned when
// there is neither.
func (d *Driver) withContainer(ctx context.Context, id string, op func(ref string) error) error {
	err := op(d.name(id))
	if err == nil || !cerrdefs.IsNotFound(err) || !d.tagged() {
		return err
	}
	c, lerr := d.legacy(ctx, containerName(id), id, LabelID)
	if lerr != nil {
		return err
	}
	return op(c.ID)
}
