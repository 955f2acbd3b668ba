package agent

import (
	"context"
	"errors"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/executor"
	"github.com/berthhq/berth/internal/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// What the agent does for one task group. Starting and adopting return at once (the
// executor works in its own goroutines); kills and removals wait for the pod to end, so
// they run in goroutines the agent owns (a.ops), at most one per task group.

// op is a kill or removal in progress; remove is set when the task group must also be
// removed once its kill is done (a Stopped task group that is then deleted).
type op struct{ remove bool }

// handle acts on one task group bound to this node. states are the drivers' tasks of the
// task group when the executor does not know it yet (after a restart): they are adopted,
// never started a second time.
func (a *Agent) handle(ctx context.Context, tg *v4.TaskGroup, states []ownedState) {
	ns, name := tg.Metadata.Namespace, tg.Metadata.Name
	if a.busy(ns, name) {
		return
	}
	stopped := tg.Spec.Desired == v4.DesiredStopped
	if st, known := a.exec.Status(ns, name); known {
		if stopped && !v4.Terminal(st.Phase) {
			a.killLater(ns, name)
		}
		// The server marked it Lost while this agent was unreachable, and it still runs
		// here: say so at once. Its status has not changed here, so neither a status
		// change nor a periodic report (which carries only changes, but every tenth)
		// would tell the server soon.
		if tg.Status.Phase == v4.StatusLost && !stopped && st.Phase != v4.StatusLost && !v4.Terminal(st.Phase) {
			a.reportTaskGroup(ns, name, st)
		}
		return
	}
	if len(states) > 0 {
		list := make([]driver.State, len(states))
		for i, s := range states {
			list[i] = s.state
		}
		adopted := a.exec.Adopt(a.runCtx, tg, list)
		a.metrics.adopted(adopted)
		if adopted {
			a.checkpointPut(tg)
			if stopped {
				a.killLater(ns, name)
			}
			return
		}
		// Nothing the executor can take over (the template cannot be run here any more):
		// stop the leftovers before anything else runs under this name.
		a.log.Warn("cannot adopt the running tasks of a task group; stopping them", "namespace", ns, "name", name)
		a.stopTasks(ctx, states, graceOf(tg.Spec.KillGracePeriod))
	}
	switch {
	case stopped:
		// Asked to stop and nothing runs here: say it ended, or the controller waits forever.
		if !v4.Terminal(tg.Status.Phase) {
			a.reporter.enqueue(ns, name, stoppedStatus(tg, a.cfg.IP))
		}
	case v4.Terminal(tg.Status.Phase):
		// Ended is final (BCS): what follows is the controller's decision, not a restart here.
	default:
		// The start continues the trace of the placement that bound the task group here.
		ctx, span := tracing.StartFrom(a.runCtx, tracer, &tg.Metadata, time.Now(), "agent.StartTaskGroup", trace.WithAttributes(
			attribute.String("berth.node", a.cfg.NodeName), attribute.String("berth.namespace", ns), attribute.String("berth.name", name)))
		a.checkpointPut(tg)
		a.log.Info("starting task group", "namespace", ns, "name", name)
		a.exec.Run(ctx, tg)
		span.End()
	}
}

// stoppedStatus is the Finish status of a Stopped task group that does not run here.
func stoppedStatus(tg *v4.TaskGroup, hostIP string) v4.TaskGroupStatus {
	now := time.Now().UTC()
	st := v4.TaskGroupStatus{Phase: v4.StatusFinish, Message: "stopped: it was not running on the node",
		Updated: now, HostIP: hostIP, StartedAt: tg.Status.StartedAt, FinishedAt: now}
	for _, name := range v4.TaskNames(&tg.Spec.Template.Spec) {
		st.Tasks = append(st.Tasks, v4.TaskStatus{Name: name, Status: v4.StatusFinish, Info: v4.ContainerInfo{Name: name, FinishAt: now}})
	}
	return st
}

// busy reports whether a kill or removal of the task group is in progress.
func (a *Agent) busy(ns, name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ops[tgKey(ns, name)] != nil
}

// killLater kills a pod deliberately (it ends Finish) in the background.
func (a *Agent) killLater(ns, name string) { a.startOp(ns, name, false, "") }

// removeLater kills a pod if it runs, then removes its tasks, its directory and its
// checkpoint entry, in the background.
func (a *Agent) removeLater(ns, name, why string) { a.startOp(ns, name, true, why) }

func (a *Agent) startOp(ns, name string, remove bool, why string) {
	key := tgKey(ns, name)
	a.mu.Lock()
	if o := a.ops[key]; o != nil {
		o.remove = o.remove || remove
		a.mu.Unlock()
		return
	}
	if a.runCtx.Err() != nil {
		a.mu.Unlock()
		return
	}
	o := &op{remove: remove}
	a.ops[key] = o
	a.opsWG.Add(1)
	a.mu.Unlock()
	if remove {
		a.log.Info("stopping and removing task group", "namespace", ns, "name", name, "why", why)
	} else {
		a.log.Info("stopping task group", "namespace", ns, "name", name)
	}
	go func() {
		defer a.opsWG.Done()
		a.leaveServices(ns, name)
		a.exec.Kill(ns, name) // returns once the pod ended, or the executor closed
		for {
			a.mu.Lock()
			remove := o.remove
			if !remove || a.runCtx.Err() != nil {
				delete(a.ops, key)
				a.mu.Unlock()
				return
			}
			o.remove = false
			a.mu.Unlock()
			a.removeNow(ns, name)
		}
	}()
}

// removeNow removes an ended pod. On failure the checkpoint keeps it, so the next
// reconcile (or restart) tries again.
func (a *Agent) removeNow(ns, name string) {
	key := tgKey(ns, name)
	if err := a.exec.Remove(a.runCtx, ns, name); err != nil {
		if a.runCtx.Err() == nil {
			a.log.Error("cannot remove task group", "namespace", ns, "name", name, "err", err)
		}
		return
	}
	a.reporter.forget(key)
	a.metrics.forget(key)
	a.vols.Release(key)
	a.volumesReleased()
	if e, ok := a.ckpt.get(key); ok {
		a.releaseGPUs(e)
		a.releaseDevices(e)
	}
	if err := a.ckpt.remove(key); err != nil {
		a.log.Error("cannot write the checkpoint", "err", err)
	}
	a.log.Info("task group removed", "namespace", ns, "name", name)
}

// stopOrphans stops and removes, in the background, the tasks of a task group the server
// no longer binds to this node and the executor does not know (left from before a
// restart), then its pod directory.
func (a *Agent) stopOrphans(key string, states []ownedState) {
	ns, name := splitKey(key)
	a.mu.Lock()
	if a.ops[key] != nil || a.runCtx.Err() != nil {
		a.mu.Unlock()
		return
	}
	a.ops[key] = &op{}
	a.opsWG.Add(1)
	a.mu.Unlock()
	grace := defaultKillGrace
	if e, ok := a.ckpt.get(key); ok {
		grace = graceOf(e.KillGracePeriod)
	}
	a.log.Info("stopping the tasks of a task group that is gone", "namespace", ns, "name", name, "tasks", len(states))
	go func() {
		defer a.opsWG.Done()
		defer func() {
			a.mu.Lock()
			delete(a.ops, key)
			a.mu.Unlock()
		}()
		if a.stopTasks(a.runCtx, states, grace) {
			a.removeNow(ns, name) // unknown to the executor: removes the pod directory
		}
	}()
}

// stopTasks stops and removes tasks through their drivers; it reports whether all went.
func (a *Agent) stopTasks(ctx context.Context, states []ownedState, grace time.Duration) bool {
	ok := true
	for _, s := range states {
		id := s.state.ID
		if err := s.drv.Stop(ctx, id, grace); err != nil && !errors.Is(err, driver.ErrNotFound) {
			a.log.Error("cannot stop task", "task", id, "err", err)
			ok = false
			continue
		}
		if err := s.drv.Remove(ctx, id); err != nil && !errors.Is(err, driver.ErrNotFound) {
			a.log.Error("cannot remove task", "task", id, "err", err)
			ok = false
		}
	}
	return ok
}

// checkpointPut records a task group the executor now runs.
func (a *Agent) checkpointPut(tg *v4.TaskGroup) {
	dir := executor.PodDir(a.cfg.DataDir, tg.Metadata.Namespace, tg.Metadata.Name)
	if err := a.ckpt.put(tg, dir, a.cfg.GPUSharing); err != nil {
		a.log.Error("cannot write the checkpoint", "err", err)
	}
}

// graceOf turns a kill grace period in seconds into a duration (BCS: at least 1 s).
func graceOf(seconds int) time.Duration {
	if seconds <= 0 {
		return defaultKillGrace
	}
	return time.Duration(seconds) * time.Second
}

func splitKey(key string) (string, string) {
	ns, name, _ := strings.Cut(key, "/")
	return ns, name
}
