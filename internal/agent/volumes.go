package agent

import (
	"context"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/instvol"
)

// volumeSweepInterval is how often the agent looks for instance volumes that are no
// longer used, besides after each removal of a task group.
const volumeSweepInterval = time.Minute

// volumeGrace is how long an instance's directories outlive its last task group on the
// node when nothing said it left for good.
func (a *Agent) volumeGrace() time.Duration {
	if a.cfg.InstanceVolumeGrace > 0 {
		return a.cfg.InstanceVolumeGrace
	}
	return instvol.DefaultGrace
}

// taskGroupLeaves records, when the server deletes a task group of the node or binds it
// to another node, whether its instance left the node for good: the controller marked
// it (v4.InstanceEndsAnnotation: its workload was deleted or scaled below its index), in
// its last state or the one the agent saw before, or it is now another node's. Otherwise
// (a restart, a rollout to a new revision, a move) its directories wait for the next run
// of the instance on the node, or the grace.
func (a *Agent) taskGroupLeaves(tg *v4.TaskGroup) {
	a.mu.Lock()
	prev := a.desired[tgKey(tg.Metadata.Namespace, tg.Metadata.Name)]
	a.mu.Unlock()
	ends := tg.Metadata.Annotations[v4.InstanceEndsAnnotation] == "true" ||
		prev != nil && prev.Metadata.Annotations[v4.InstanceEndsAnnotation] == "true"
	if ends || tg.Spec.Node != a.cfg.NodeName {
		a.vols.LeftForGood(instvol.KeyOf(tg))
	}
}

// volumesInUse are the instances of the task groups the server binds to the node.
func (a *Agent) volumesInUse() []instvol.Key {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]instvol.Key, 0, len(a.desired))
	for _, tg := range a.desired {
		out = append(out, instvol.KeyOf(tg))
	}
	return out
}

// sweepVolumes removes the directories of instances no task group of the node uses any
// more: at once those that left for good, the others after the grace.
func (a *Agent) sweepVolumes() {
	removed, err := a.vols.Sweep(a.volumesInUse, time.Now(), a.volumeGrace())
	for _, rel := range removed {
		a.log.Info("instance volumes removed", "instance", rel)
	}
	if err != nil {
		a.log.Warn("instance volumes", "err", err)
	}
}

// volumesReleased asks volumesLoop for a sweep: a task group's pod was removed. The
// removals of a whole workload's instances make one or a few sweeps, not one each.
func (a *Agent) volumesReleased() {
	select {
	case a.volSweep <- struct{}{}:
	default: // one is pending already
	}
}

// volumesLoop sweeps the instance volumes when asked and every volumeSweepInterval, until
// ctx ends.
func (a *Agent) volumesLoop(ctx context.Context) {
	t := time.NewTicker(volumeSweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.volSweep:
		}
		a.sweepVolumes()
	}
}
