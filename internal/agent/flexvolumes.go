package agent

import (
	"context"
	"fmt"
	"path/filepath"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/flexvolume"
)

// FlexVolumeDriversAttribute is the node's set attribute of the FlexVolume drivers it
// runs ("vendor/driver"), as found when it registers: users see them in `berth node
// get`.
const FlexVolumeDriversAttribute = "flexvolume.drivers"

// describeFlexVolumes adds the installed drivers to the node's attributes.
func (a *Agent) describeFlexVolumes(n *v4.Node) {
	if a.flex == nil {
		return
	}
	drivers := a.flex.Drivers()
	if len(drivers) == 0 {
		return
	}
	if n.Spec.Attributes.Set == nil {
		n.Spec.Attributes.Set = map[string][]string{}
	}
	n.Spec.Attributes.Set[FlexVolumeDriversAttribute] = drivers
}

// FlexVolumes (docs/pods.md, "FlexVolume"): the drivers of --volume-plugin-dir mount the
// pods' flexVolume volumes for the executor. Their mounts are recorded under the data
// dir, so that those of pods that went while the agent was down, or whose unmount
// failed, are undone by runFlexVolumes, retried with backoff and reported until they are.

// newFlexVolumes makes the FlexVolume manager when a plugin dir is configured.
func (a *Agent) newFlexVolumes() (*flexvolume.Manager, error) {
	if a.cfg.VolumePluginDir == "" {
		return nil, nil
	}
	if !filepath.IsAbs(a.cfg.VolumePluginDir) {
		return nil, fmt.Errorf("agent config: --volume-plugin-dir %q: must be an absolute directory", a.cfg.VolumePluginDir)
	}
	m, err := flexvolume.New(flexvolume.Options{PluginDir: a.cfg.VolumePluginDir, StateDir: filepath.Join(a.cfg.DataDir, "flexvolumes"),
		NodeName: a.cfg.NodeName, Timeout: a.cfg.FlexVolumeTimeout, Failed: a.flexUnmountFailed, Logger: a.log})
	if err != nil {
		return nil, fmt.Errorf("agent config: --volume-plugin-dir: %w", err)
	}
	return m, nil
}

// runFlexVolumes undoes the FlexVolume mounts of pods the node no longer runs, at once
// and then periodically, until ctx ends.
func (a *Agent) runFlexVolumes(ctx context.Context) {
	if a.flex == nil {
		return
	}
	if d := a.flex.Drivers(); len(d) > 0 {
		a.log.Info("FlexVolume drivers", "dir", a.flex.PluginDir(), "drivers", d)
	}
	a.flex.Run(ctx, a.runsPod)
}

// runsPod reports whether the node has pod ("namespace/name"): the checkpoint holds every
// pod from before the executor starts it (and mounts its volumes) until it is removed.
func (a *Agent) runsPod(pod string) bool {
	_, ok := a.ckpt.get(pod)
	return ok
}

// flexUnmountFailed reports a failed unmount of a gone pod's volume: the manager logs
// it, the metric counts it, and the node's events show it to its operator.
func (a *Agent) flexUnmountFailed(r flexvolume.Record, attempt int, err error) {
	a.metrics.flexFailures.WithLabelValues(r.Driver).Inc()
	a.warnNode("FlexVolumeUnmountFailed", fmt.Sprintf("cannot unmount the FlexVolume %s of pod %s (driver %s, attempt %d; retried with backoff): %v",
		r.Dir, r.Pod, r.Driver, attempt, err))
}
