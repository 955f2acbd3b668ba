package executor

import (
	"context"
	"slices"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// Adopt takes over a pod whose tasks the drivers still have, after an agent restart: the
// tasks are matched by their berth labels, and when every one runs the pod is reported
// Running with the same PIDs and monitored and health-checked again. When some task ended
// (or is missing) the pod fails as if it had exited under monitoring: the others are
// stopped and every task is reported Failed. It returns false when states hold none of the
// pod's tasks (there is nothing to adopt: the caller runs it or forgets it), and true
// without doing anything when the executor already monitors the pod, or knows it ended and
// none of its tasks runs (a terminal status is final; a running task is a new run).
func (e *Executor) Adopt(ctx context.Context, tg *v4.TaskGroup, states []driver.State) bool {
	ns, name := tg.Metadata.Namespace, tg.Metadata.Name
	p := e.newPod(tg)
	if p.plan.err != nil {
		e.log.Warn("cannot adopt task group", "namespace", ns, "name", name, "err", p.plan.err)
		return false
	}
	if s := tg.Status.Step; s != nil && s.Collected && p.plan.step != nil {
		p.step = s // collected before the agent restarted: not again
	}
	mine := make([]driver.State, len(p.plan.tasks))
	found := 0
	for i, tp := range p.plan.tasks {
		j := slices.IndexFunc(states, func(s driver.State) bool {
			return s.Labels[driver.LabelTaskGroup] == podKey(ns, name) && s.Labels[driver.LabelTask] == tp.name
		})
		if j < 0 {
			continue // missing: an empty State, which counts as ended
		}
		mine[i] = states[j]
		p.started[i] = true
		found++
	}
	if found == 0 {
		return false
	}

	if h := p.plan.holder; h != nil {
		// The holder's IP is the pod's; it goes when the pod ends.
		if j := slices.IndexFunc(states, func(s driver.State) bool {
			return s.Labels[driver.LabelTaskGroup] == podKey(ns, name) && s.Labels[driver.LabelTask] == v4.NetworkHolderTask
		}); j >= 0 {
			p.holding = true
			mine = append(mine, states[j]) // read for the IP below, then dropped
		}
	}
	if n := p.plan.net; n != nil {
		// The pod's IP as the drivers report it (the owner's, the holder's, or any for
		// CNI), and a CNI sandbox to tear down when the pod ends.
		for _, s := range mine {
			if s.Info.IPAddress != "" {
				p.podIP = s.Info.IPAddress
				break
			}
		}
		if n.hostMode() {
			p.podIP = e.cfg.HostIP
		}
		p.sandbox = n.cni
	}
	mine = mine[:len(p.plan.tasks)]
	if _, _, ended := p.plan.firstEnded(mine); !ended {
		p.resume(mine)
	}
	e.mu.Lock()
	if e.ctx.Err() != nil {
		e.mu.Unlock()
		return false
	}
	if old, ok := e.pods[podKey(ns, name)]; ok && (!old.ended() || !slices.ContainsFunc(mine, func(s driver.State) bool { return s.Running })) {
		// Monitored already, or ended with nothing running again: its status stays final.
		e.mu.Unlock()
		return true
	}
	e.pods[podKey(ns, name)] = p
	e.wg.Add(1)
	e.mu.Unlock()

	e.log.Info("adopted task group", "namespace", ns, "name", name, "tasks", found)
	go e.runPod(ctx, p, mine)
	return true
}

// resume sets an adopted pod whose tasks all run to Running, with the drivers' info
// (same PIDs); StartedAt is the earliest task start. It runs before the pod is published,
// so Status and List show it at once; the pod's goroutine reports it.
func (p *pod) resume(states []driver.State) {
	st := &p.status
	var started time.Time
	for i := range st.Tasks {
		info := p.decorate(i, states[i].Info)
		st.Tasks[i].Status = v4.StatusRunning
		st.Tasks[i].Info = info
		if !p.plan.runs(i) || p.plan.cleanMainEnd(i, states[i]) {
			// An init task ended before the pod ran (or was removed since); a main task
			// of a pod with roles completed.
			st.Tasks[i].Status, st.Tasks[i].Message = v4.StatusFinish, "completed"
			continue
		}
		if started.IsZero() || (!info.StartAt.IsZero() && info.StartAt.Before(started)) {
			started = info.StartAt
		}
	}
	if started.IsZero() {
		started = time.Now()
	}
	st.StartedAt = started
	st.Phase = v4.AggregateTaskGroup(st.Tasks)
	p.vols.ready = true // made by the agent that started the pod
}
