package executor

import (
	"context"
	"fmt"
	"syscall"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// holderPlan is the network holder of a container pod whose first task to start is an
// init task (docs/pods.md, "Network"): BCS's pods have the first container own the
// network, but an init task ends, and the tasks after it must keep the network it had.
// The holder is a task of the pod in the driver (its labels name it), not in the pod's
// status: it is started first, joined by every task, and stopped last.
type holderPlan struct {
	id     string
	labels map[string]string
}

// planHolder returns the pod's network holder, or nil when the pod needs none.
func (e *Executor) planHolder(tg *v4.TaskGroup, p *podPlan) *holderPlan {
	if p.net == nil || p.net.cni || p.net.hostMode() || len(p.order) == 0 || p.tasks[p.order[0]].role() != v4.RoleInit {
		return nil // HOST mode: every task takes the host's network itself (joinNetwork)
	}
	return &holderPlan{id: TaskID(p.ns, p.name, v4.NetworkHolderTask), labels: taskLabels(tg, e.cfg.NodeName, v4.NetworkHolderTask)}
}

// startHolder starts the pod's network holder with the pod's network mode, port
// bindings, host name and resolver, and makes its IP the pod's. It returns the ID the
// tasks join.
func (p *pod) startHolder(ctx context.Context) (string, error) {
	h, n := p.plan.holder, p.plan.net
	drv := p.plan.tasks[0].drv
	nh, ok := drv.(driver.NetworkHolders)
	if !ok {
		return "", fmt.Errorf("the %s driver cannot hold a pod's network, which a pod that starts with an init task needs", drv.Name())
	}
	img, err := nh.HolderImage(ctx)
	if err != nil {
		return "", fmt.Errorf("start the pod's network holder: %w", err)
	}
	t := &driver.Task{
		ID: h.id, Name: v4.NetworkHolderTask, Labels: h.labels,
		Container:   &v4.Container{Image: img, ImagePullPolicy: v4.PullIfNotPresent},
		WorkBaseDir: p.plan.subdir("work"), RunBaseDir: p.plan.subdir("run"), LogDir: p.plan.subdir("logs"),
		KillGrace: p.e.cfg.ForceGrace,
		Setup: &driver.ContainerSetup{
			NetworkMode: n.mode, PortBindings: n.bindings, DNS: p.containerDNS(),
			// The spec's first container's host name, which BCS gave the network owner.
			Hostname: p.plan.tasks[0].container.Hostname,
		},
	}
	p.mu.Lock()
	p.holding = true // a start that fails half way is stopped too
	p.mu.Unlock()
	st, err := drv.Start(ctx, t)
	if err != nil {
		return "", fmt.Errorf("start the pod's network holder: %w", err)
	}
	p.setPodIP(p.ownerIP(st.Info.IPAddress))
	return h.id, nil
}

// stopHolder kills the pod's network holder once its tasks stopped: it runs nothing
// that a signal could ask to end politely.
func (p *pod) stopHolder(ctx context.Context) {
	p.mu.Lock()
	has := p.holding
	p.mu.Unlock()
	if !has {
		return
	}
	drv := p.plan.tasks[0].drv
	id := p.plan.holder.id
	if err := drv.Signal(ctx, id, syscall.SIGKILL); err != nil && !isGone(err) {
		p.e.log.Debug("kill the pod's network holder", "task", id, "err", err)
	}
	if err := drv.Stop(ctx, id, p.e.cfg.ForceGrace); err != nil && !isGone(err) {
		p.e.log.Error("stop the pod's network holder", "task", id, "err", err)
	}
}

// removeHolder removes the pod's network holder from its driver.
func (p *pod) removeHolder(ctx context.Context) error {
	if p.plan.holder == nil {
		return nil
	}
	if err := p.plan.tasks[0].drv.Remove(ctx, p.plan.holder.id); err != nil && !isGone(err) {
		return fmt.Errorf("remove the pod's network holder: %w", err)
	}
	return nil
}
