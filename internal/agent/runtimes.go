package agent

import (
	"context"
	"maps"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver/containerd"
	"github.com/berthhq/berth/internal/driver/docker"
)

// Per-workload runtimes (docs/runtimes.md): the node reports the runtime handlers its
// container driver has as the set attribute v4.AttrContainerRuntimes, which the
// scheduler matches against a pod's spec.runtime. They are read once, when the driver
// opens: a handler installed later is offered after the agent restarts.

// describeRuntimes adds the container driver's runtime handlers to the node's attributes.
func (a *Agent) describeRuntimes(n *v4.Node) {
	if len(a.containerRuntimes) == 0 {
		return
	}
	if n.Spec.Attributes.Set == nil {
		n.Spec.Attributes.Set = map[string][]string{}
	}
	n.Spec.Attributes.Set[v4.AttrContainerRuntimes] = slices.Clone(a.containerRuntimes)
}

// containerdHandlers are containerd's handlers: runc and crun where PATH has them, and
// those the operator declares (--container-runtimes), which win over them. A declared
// binary that is missing or not executable stops the agent: it is the operator's
// mistake, better seen at start than as pods failing.
func containerdHandlers(entries []string) (map[string]containerd.Handler, error) {
	declared, err := containerd.ParseHandlers(entries)
	if err != nil {
		return nil, err
	}
	out := containerd.DefaultHandlers()
	maps.Copy(out, declared)
	return out, nil
}

// dockerRuntimes are the runtimes of Docker's daemon (docker info), none when it does
// not answer now (with --docker on and the daemon down): pods naming a runtime then go to
// other nodes until the agent restarts.
func (a *Agent) dockerRuntimes(ctx context.Context, d *docker.Driver) []string {
	rctx, cancel := context.WithTimeout(ctx, dockerProbeTimeout)
	defer cancel()
	rts, err := d.Runtimes(rctx)
	if err != nil {
		a.log.Warn("cannot list Docker's runtimes; the node offers none to pods that name one", "err", err)
		return nil
	}
	a.log.Info("docker runtimes", "runtimes", rts)
	return rts
}
