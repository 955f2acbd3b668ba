package executor

import (
	"context"
	"fmt"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// stopTimeout bounds a Stop call beyond its grace (a stopCmd that hangs, a slow daemon).
const stopTimeout = 30 * time.Second

// stopAll stops every started task except skip (-1: none) and returns every started
// task's final info (index -> info). The tasks stop in the pod's stop groups
// (docs/pods.md, "Start and stop"): the main tasks together, then the sidecars one by
// one, the last started first; then the network holder goes and a CNI pod's network is
// torn down. polite is a deliberate stop (a kill, a failed health check): each task's
// preStop hook runs first, and every task must be stopped when grace is over, hooks
// included; the stops that follow a failure (BCS 强杀) run no hooks. Stops run on a
// context that outlives ctx: a pod must end cleanly even when the agent shuts down in the
// middle.
func (p *pod) stopAll(ctx context.Context, grace time.Duration, skip int, polite bool) map[int]v4.ContainerInfo {
	groups := p.plan.stopGroups()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace+stopTimeout+time.Duration(len(groups))*p.e.cfg.ForceGrace)
	defer cancel()
	started := p.startedTasks()
	done := p.finishedTasks()
	var mu sync.Mutex
	infos := map[int]v4.ContainerInfo{}
	deadline := time.Now().Add(grace)
	for g, group := range groups {
		budget := grace // the first group's; the others get what is left of it
		if g > 0 {
			budget = time.Until(deadline)
		}
		var wg sync.WaitGroup
		for _, i := range group {
			if !started[i] {
				continue
			}
			wg.Go(func() {
				if i != skip && !done[i] {
					p.stopTask(sctx, i, budget, deadline, polite)
				}
				if info, ok := p.finalInfo(sctx, i); ok {
					mu.Lock()
					infos[i] = info
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	p.stopHolder(sctx)
	if err := p.teardownNetwork(sctx); err != nil {
		// Remove tries again; the pod ends all the same.
		p.e.log.Error("pod network teardown", "namespace", p.ns, "name", p.name, "err", err)
	}
	if err := p.releaseVolumes(sctx); err != nil {
		// Remove tries again before it removes the pod's directory.
		p.e.log.Error("pod volumes", "namespace", p.ns, "name", p.name, "err", err)
	}
	return infos
}

// stopTask stops task i with budget as its grace, or, after its preStop hook (polite),
// what is left until deadline; at least ForceGrace, so that a sidecar stopped after
// main tasks that took the whole grace still gets its signal before SIGKILL.
func (p *pod) stopTask(ctx context.Context, i int, budget time.Duration, deadline time.Time, polite bool) {
	tp := &p.plan.tasks[i]
	if polite && p.preStop(ctx, i, deadline) {
		budget = time.Until(deadline)
	}
	began := time.Now()
	err := tp.drv.Stop(ctx, tp.id, max(budget, p.e.cfg.ForceGrace))
	if isGone(err) {
		err = nil
	}
	p.e.observer().TaskStopped(tp.driverName(), time.Since(began), err)
	if err != nil {
		p.e.log.Error("stop task", "task", tp.id, "err", err)
	}
}

// finalInfo is task i's info once it stopped, as its driver tells it.
func (p *pod) finalInfo(ctx context.Context, i int) (v4.ContainerInfo, bool) {
	tp := &p.plan.tasks[i]
	st, err := tp.drv.Inspect(ctx, tp.id)
	if err != nil {
		if !isGone(err) {
			p.e.log.Error("inspect stopped task", "task", tp.id, "err", err)
		}
		return v4.ContainerInfo{}, false
	}
	return p.decorate(i, st.Info), true
}

// endAll sets every task to status with its final info and message (from msgs, or
// groupMsg), and the group's message and finish time.
func (p *pod) endAll(status, groupMsg string, infos map[int]v4.ContainerInfo, msgs map[int]string, mark func(*v4.TaskGroupStatus)) {
	started := p.startedTasks()
	step := p.finalStep(groupMsg)
	p.update(func(st *v4.TaskGroupStatus) {
		now := time.Now()
		for i := range st.Tasks {
			t := &st.Tasks[i]
			if t.Status == v4.StatusFinish {
				continue // it ended before, successfully, on its own: that stays as it was
			}
			t.Status = status
			if info, ok := infos[i]; ok {
				// Keep what health checks recorded; the driver does not know it.
				info.Healthy, info.IsChecked, info.ConsecutiveFailureTimes = t.Info.Healthy, t.Info.IsChecked, t.Info.ConsecutiveFailureTimes
				t.Info = info
			}
			t.Message = groupMsg
			if m, ok := msgs[i]; ok {
				t.Message = m
			}
			if t.Info.FinishAt.IsZero() && started[i] {
				t.Info.FinishAt = now
			}
		}
		st.Message = groupMsg
		st.FinishedAt = now
		if step != nil {
			st.Step = step
		}
		if mark != nil {
			mark(st)
		}
	})
}

// failStart ends a pod whose start failed: the tasks already started are stopped (force)
// and every task is reported Failed with the error.
func (p *pod) failStart(ctx context.Context, err error) {
	p.e.log.Warn("task group failed to start", "namespace", p.ns, "name", p.name, "err", err)
	infos := p.stopAll(ctx, p.e.cfg.ForceGrace, -1, false)
	var mark func(*v4.TaskGroupStatus)
	if c := p.portConflict(err); c != nil {
		mark = func(st *v4.TaskGroupStatus) { st.Reason, st.PortsTaken = v4.ReasonPortConflict, c.Ports }
	}
	p.endAll(v4.StatusFailed, err.Error(), infos, nil, mark)
}

// failExit ends a running pod because task i stopped running: the others are stopped by
// force (BCS 强杀) and every task is reported with its info, Finish when task i exited
// with code 0 and Failed otherwise. (BCS's container executor reported every exit as
// Failed, so OnFailure restarted a run that had succeeded; its process executor and Mesos
// report TASK_FINISHED for a clean exit, as Kubernetes' OnFailure does not restart one.)
func (p *pod) failExit(ctx context.Context, i int, st driver.State) {
	tp := &p.plan.tasks[i]
	why := exitReason(st)
	phase := v4.StatusFailed
	if st.ID != "" && !st.Info.OOMKilled && st.Info.ExitCode == 0 && tp.role() != v4.RoleSidecar {
		phase = v4.StatusFinish // a sidecar's end is never the pod's success
	}
	p.e.log.Warn("task ended: ending the task group", "namespace", p.ns, "name", p.name, "task", tp.name, "reason", why, "phase", phase)
	code := st.Info.ExitCode
	if st.ID == "" {
		code = -1 // gone: no exit code
	}
	if !p.collectStep(ctx, i, code) {
		return // the executor closed: the next agent collects
	}
	infos := p.stopAll(ctx, p.e.cfg.ForceGrace, i, false)
	if _, ok := infos[i]; !ok && st.ID != "" {
		infos[i] = p.decorate(i, st.Info)
	}
	groupMsg := fmt.Sprintf("task %s %s", tp.name, why)
	p.endAll(phase, "stopped: "+groupMsg, infos, map[int]string{i: why}, func(s *v4.TaskGroupStatus) {
		s.Message = groupMsg
	})
}

// exitReason says how a task ended, from the driver's info.
func exitReason(st driver.State) string {
	switch {
	case st.ID == "":
		return "is gone: the driver no longer has it"
	case st.Info.OOMKilled:
		return "killed: out of memory"
	}
	return fmt.Sprintf("exited with code %d", st.Info.ExitCode)
}

// failHealth ends a running pod whose task i failed its health check too often: every
// task is stopped with the kill grace and reported Failed, HealthKilled.
func (p *pod) failHealth(ctx context.Context, hf healthFailure) {
	tp := &p.plan.tasks[hf.task]
	why := fmt.Sprintf("health check failed %d times: %s", hf.failures, hf.message)
	p.e.log.Warn("health check failed: killing the task group", "namespace", p.ns, "name", p.name, "task", tp.name, "reason", why)
	infos := p.stopAll(ctx, p.plan.grace, -1, true)
	groupMsg := fmt.Sprintf("task %s: %s", tp.name, why)
	p.endAll(v4.StatusFailed, "stopped: "+groupMsg, infos, map[int]string{hf.task: why}, func(s *v4.TaskGroupStatus) {
		s.Message = groupMsg
		s.HealthKilled = true
	})
}

// killedMessage is the message of a deliberate kill.
const killedMessage = "killed by berth"

// kill is the deliberate kill: every task Killing, all stopped with the kill grace, then
// every task Finish, even when a task failed meanwhile.
func (p *pod) kill(ctx context.Context) {
	p.update(func(st *v4.TaskGroupStatus) {
		for i := range st.Tasks {
			if st.Tasks[i].Status != v4.StatusFinish { // one that ended on its own stays so
				st.Tasks[i].Status = v4.StatusKilling
			}
		}
		st.Message = "killing"
	})
	infos := p.stopAll(ctx, p.plan.grace, -1, true)
	p.endAll(v4.StatusFinish, killedMessage, infos, nil, nil)
}
