package docker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/moby/moby/client"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// Per-workload runtimes (docs/runtimes.md): Docker runs a container with one of the
// runtimes of its daemon.json (`docker info` → Runtimes: runc, and those its operator
// added, such as runsc or nvidia); a pod's runtime names one (HostConfig.Runtime).

// Runtimes are the names of the daemon's runtimes, sorted: what the node reports as its
// v4.AttrContainerRuntimes. A name that is not a handler's name (v4.CheckRuntimeName) is
// left out, as no spec could ask for it.
func (d *Driver) Runtimes(ctx context.Context) ([]string, error) {
	res, err := d.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return nil, d.wrap(err, "docker info")
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(res.Info.Runtimes)) {
		if v4.CheckRuntimeName(name) == nil {
			out = append(out, name)
		}
	}
	return out, nil
}

// checkRuntime refuses a runtime the daemon does not have (the node may have changed
// since the scheduler placed the pod), naming those it has. A daemon that cannot say
// lets the create go on: Docker refuses an unknown runtime itself.
func (d *Driver) checkRuntime(ctx context.Context, t *driver.Task) error {
	rt := t.Setup.Runtime
	if rt == "" {
		return nil
	}
	if err := v4.CheckRuntimeName(rt); err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	have, err := d.Runtimes(ctx)
	if err != nil {
		d.log.Warn("cannot list the daemon's runtimes; creating the container anyway", "task", t.ID, "runtime", rt, "err", err)
		return nil
	}
	if !slices.Contains(have, rt) {
		return fmt.Errorf("runtime %q: this node does not offer it (dockerd has %s)", rt, strings.Join(have, ", "))
	}
	return nil
}
