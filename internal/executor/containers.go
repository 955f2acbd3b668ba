package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/berthhq/berth/internal/driver"
)

// ErrNoPodNetworks fails a CNI pod on a node whose container driver has no pod networks.
var ErrNoPodNetworks = errors.New("CNI mode needs a driver with pod networks")

// teardownTimeout bounds the CNI DEL and sandbox removal of one pod.
const teardownTimeout = time.Minute

// startContainers starts a container pod (docs/agent.md, Container pods).
// CNM: the first container starts first with the pod's network mode and every port
// binding; the others join its network, so if it died they cannot start and the group
// fails. CNI: the driver sets up the pod's sandbox first and every container joins it.
// Each container's BCS_CONTAINER_IP is the pod's IP once it is known.
func (p *pod) startContainers(ctx context.Context, prep *prepared) error {
	n := p.plan.net
	join := ""
	if n.cni {
		sandbox, ip, err := p.setupNetwork(ctx)
		if err != nil {
			return err
		}
		join = sandbox
		p.setPodIP(ip)
	}
	for i, t := range prep.tasks {
		switch {
		case n.cni:
			t.Setup.JoinTask = join
		case i == 0:
			t.Setup.NetworkMode = n.mode
			t.Setup.PortBindings = n.bindings
			// Docker refuses a host name for a container that joins another's network,
			// so only the owner gets the spec's.
			t.Setup.Hostname = p.plan.tasks[i].container.Hostname
		default:
			t.Setup.JoinTask = prep.tasks[0].ID
		}
		if ip := p.getPodIP(); ip != "" {
			prep.setEnv(p, i, ip)
		}
		if err := p.startTask(ctx, i, t); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start interrupted: %w", context.Cause(ctx))
	}
	return nil
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
