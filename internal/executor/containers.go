package executor

import (
	"context"
	"errors"
	"fmt"
	v4 "github.com/berthhq/berth/api/v4"
	"time"

	"github.com/berthhq/berth/internal/driver"
)

// ErrNoPodNetworks fails a CNI pod on a node whose container driver has no pod networks.
var ErrNoPodNetworks = errors.New("CNI mode needs a driver with pod networks")

// teardownTimeout bounds the CNI DEL and sandbox removal of one pod.
const teardownTimeout = time.Minute

// podNetwork sets up what a container pod's tasks join (docs/agent.md, Container pods;
// docs/pods.md, "Network"): the CNI sandbox (whose IP is the pod's), or the network
// holder of a pod that starts with an init task. It returns "" when the pod's first task
// to start owns the network (CNM, BCS's pods), and for process pods.
func (p *pod) podNetwork(ctx context.Context) (string, error) {
	n := p.plan.net
	switch {
	case n == nil:
		return "", nil
	case n.cni:
		sandbox, ip, err := p.setupNetwork(ctx)
		if err != nil {
			return "", err
		}
		p.setPodIP(ip)
		return sandbox, nil
	case p.plan.holder != nil:
		return p.startHolder(ctx)
	}
	return "", nil
}

// joinNetwork decides container i's network before it starts. CNM: the owner (the first
// task to start) gets the pod's network mode and every port binding, and the others join
// it, so if it died they cannot start and the group fails; with a sandbox or a holder
// (join), every container joins that. Each container's BCS_CONTAINER_IP is the pod's IP
// once it is known.
func (p *pod) joinNetwork(i int, prep *prepared, join string) {
	t := prep.tasks[i]
	owner := p.plan.owner
	switch {
	case join != "":
		t.Setup.JoinTask = join
	case owner < 0:
		// A HOST pod whose first task ends: nobody may join it, and the host's network
		// needs no holder.
		t.Setup.NetworkMode = p.plan.net.mode
	case i == owner:
		t.Setup.NetworkMode = p.plan.net.mode
		t.Setup.PortBindings = p.plan.net.bindings
		// Docker refuses a host name for a container that joins another's network,
		// so only the owner gets the spec's.
		t.Setup.Hostname = p.plan.tasks[i].container.Hostname
	default:
		t.Setup.JoinTask = prep.tasks[owner].ID
	}
	if ip := p.getPodIP(); ip != "" {
		prep.setEnv(p, i, ip)
	}
}

// networkOwner is the task that owns a CNM pod's network: the first to start (BCS's first
// container), unless that is an init task, which ends (a holder owns the network then, or
// in HOST mode nobody needs to); -1 for those, CNI pods and processes.
func (p *podPlan) networkOwner() int {
	if p.net == nil || p.net.cni || len(p.order) == 0 || p.tasks[p.order[0]].role() == v4.RoleInit {
		return -1
	}
	return p.order[0]
}

// setupNetwork creates the CNI sandbox of the pod through the driver.
func (p *pod) setupNetwork(ctx context.Context) (string, string, error) {
	n := p.plan.net
	pn, ok := p.plan.tasks[0].drv.(driver.PodNetworks)
	if !ok {
		return "", "", ErrNoPodNetworks
	}
	// Marked before the call: a setup that fails half way must be torn down as well.
	p.mu.Lock()
	p.sandbox = true
	p.mu.Unlock()
	sandbox, ip, err := pn.SetupPod(ctx, n.podID, n.labels, n.bindings)
	if err != nil {
		return "", "", fmt.Errorf("set up the pod network (CNI): %w", err)
	}
	return sandbox, ip, nil
}

// teardownNetwork runs CNI DEL and removes the sandbox of a CNI pod that has one; it is
// safe to call again (the driver tears down a sandbox that is already gone).
func (p *pod) teardownNetwork(ctx context.Context) error {
	p.mu.Lock()
	has := p.sandbox
	p.mu.Unlock()
	if !has {
		return nil
	}
	pn, ok := p.plan.tasks[0].drv.(driver.PodNetworks)
	if !ok {
		return nil
	}
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout)
	defer cancel()
	if err := pn.TeardownPod(tctx, p.plan.net.podID); err != nil && !isGone(err) {
		return fmt.Errorf("tear down the pod network (CNI): %w", err)
	}
	p.mu.Lock()
	p.sandbox = false
	p.mu.Unlock()
	return nil
}

// ownerIP is the pod's IP given the network owner's: the node's in HOST mode, and when
// the driver gives none (NONE mode), as BCS's CNM code does.
func (p *pod) ownerIP(ip string) string {
	if p.plan.net.hostMode() || ip == "" {
		return p.e.cfg.HostIP
	}
	return ip
}

func (p *pod) setPodIP(ip string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.podIP = ip
}

func (p *pod) getPodIP() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.podIP
}
