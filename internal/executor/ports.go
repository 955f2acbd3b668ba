package executor

import (
	"errors"
	"fmt"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/hostports"
)

// PortChecker checks a task group's host ports (hostports.Checker on a node).
type PortChecker interface {
	// Check returns a *hostports.ConflictError naming the ports another program holds,
	// nil when every one is free.
	Check(ports []v4.AllocatedPort) error
	// Conflict says which of ports a driver's "port in use" message is about.
	Conflict(msg string, ports []v4.AllocatedPort) *hostports.ConflictError
}

// checkPorts binds the pod's host ports before anything starts: a process cannot tell
// berth that its bind failed (it exits, and would be restarted on the same port), and
// nothing of the pod should start when one of its ports is taken.
func (p *pod) checkPorts() error {
	pc := p.e.cfg.Ports
	if pc == nil || len(p.plan.hostPorts) == 0 {
		return nil
	}
	if err := pc.Check(p.plan.hostPorts); err != nil {
		return fmt.Errorf("cannot start: %w", err)
	}
	return nil
}

// portConflict is the port conflict a failed start ended in, nil when it did not: the
// probe's, or a driver's "port in use" turned into the ports it names.
func (p *pod) portConflict(err error) *hostports.ConflictError {
	var ce *hostports.ConflictError
	switch {
	case errors.As(err, &ce):
		return ce
	case !errors.Is(err, driver.ErrPortInUse) || len(p.plan.hostPorts) == 0:
		return nil
	case p.e.cfg.Ports != nil:
		return p.e.cfg.Ports.Conflict(err.Error(), p.plan.hostPorts)
	}
	// No checker to ask: the port the message names, else every one, since one was taken.
	named := p.plan.hostPorts
	if ap, ok := hostports.PortIn(err.Error(), named); ok {
		named = []v4.AllocatedPort{ap}
	}
	ce = &hostports.ConflictError{}
	for _, ap := range named {
		if b := (v4.BusyPort{Port: ap.HostPort, Protocol: v4.Transport(ap.Protocol)}); !slices.Contains(ce.Ports, b) {
			ce.Ports = append(ce.Ports, b)
		}
	}
	return ce
}
