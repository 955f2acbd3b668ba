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
// without doing anything when the executor already monitors the pod.
func (e *Executor) Adopt(ctx context.Context, tg *v4.TaskGroup, states []driver.State) bool {
	ns, name := tg.Metadata.Namespace, tg.Metadata.Name
	p := e.newPod(tg)
	if p.plan.err != nil {
		e.log.Warn("cannot adopt task group", "namespace", ns, "name", name, "err", p.plan.err)
		return false
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

	e.mu.Lock()
	if e.ctx.Err() != nil {
		e.mu.Unlock()
		return false
	}
	if old, ok := e.pods[podKey(ns, name)]; ok && !old.ended() {
		e.mu.Unlock()
		return true
	}
	e.pods[podKey(ns, name)] = p
	e.wg.Add(1)
	e.mu.Unlock()

	if _, _, ended := firstEnded(mine); !ended {
		p.update(func(st *v4.TaskGroupStatus) {
			var started time.Time
			for i := range st.Tasks {
				info := p.decorate(i, mine[i].Info)
				st.Tasks[i].Status = v4.StatusRunning
				st.Tasks[i].Info = info
				if started.IsZero() || (!info.StartAt.IsZero() && info.StartAt.Before(started)) {
					started = info.StartAt
				}
			}
			if started.IsZero() {
				started = time.Now()
			}
			st.StartedAt = started
		})
	}
	e.log.Info("adopted task group", "namespace", ns, "name", name, "tasks", found)
	go e.runPod(ctx, p, mine)
	return true
}
