package agent

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/hostports"
)

// Busy ports (docs/scheduling.md, "Busy ports"): the agent reads the kernel's socket
// tables every busyPortsInterval and reports, in its node's status.busyPorts, the ports
// of the node's ranges that programs other than its task groups hold, so the scheduler
// gives none of them out. It also keeps watching the ports a start found taken (a fixed
// port outside the ranges, with its holder's name) for as long as they stay taken, so
// the scheduler keeps the task groups that want them off the node meanwhile. A read is
// four small files; the node is written only when the list changes.

// DefaultBusyPortsInterval is how often the busy ports are read again by default.
const DefaultBusyPortsInterval = 10 * time.Second

// maxWatchedPorts bounds the ports kept watched after a start found them taken.
const maxWatchedPorts = 64

// busyPorts is the node's busy ports as last read and sent.
type busyPorts struct {
	procRoot string
	ranges   []v4.PortRange

	mu sync.Mutex
	// watched are ports a start found taken, with their holders, until they are free.
	watched map[v4.BusyPort]string // key without holder -> holder
	current []v4.BusyPort          // as last read
	sent    []v4.BusyPort          // as the server last took them
	known   bool                   // sent is what the server has
	kick    chan struct{}
}

func newBusyPorts(procRoot string, ranges []v4.PortRange) *busyPorts {
	if procRoot == "" {
		procRoot = "/proc"
	}
	return &busyPorts{procRoot: procRoot, ranges: ranges, watched: map[v4.BusyPort]string{}, kick: make(chan struct{}, 1)}
}

// taken records ports a start found taken: they are watched and read again now.
func (b *busyPorts) taken(ports []v4.BusyPort) {
	b.mu.Lock()
	for _, p := range ports {
		key := v4.BusyPort{Port: p.Port, Protocol: p.Protocol}
		if _, ok := b.watched[key]; ok || len(b.watched) < maxWatchedPorts {
			b.watched[key] = p.Holder
		}
	}
	b.mu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// list returns the busy ports as last read (what the node registers with).
func (b *busyPorts) list() []v4.BusyPort {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.current)
}

// read reads the sockets again: the ports of the ranges, or watched, that a socket
// serves and that none of own (the ports of the task groups running here) is. It
// returns the new list, lowest first, at most v4.MaxBusyPorts (watched ones first).
func (b *busyPorts) read(own map[int]bool) ([]v4.BusyPort, error) {
	socks, err := hostports.Bound(b.procRoot)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	bound := map[v4.BusyPort]bool{}
	var watched, ranged []v4.BusyPort
	for _, s := range socks {
		key := v4.BusyPort{Port: s.Port, Protocol: s.Protocol}
		if bound[key] || own[s.Port] { // tcp and tcp6 list a dual-stack port twice
			bound[key] = true
			continue
		}
		bound[key] = true
		if holder, ok := b.watched[key]; ok {
			watched = append(watched, v4.BusyPort{Port: s.Port, Protocol: s.Protocol, Holder: holder})
		} else if inRanges(b.ranges, s.Port) {
			ranged = append(ranged, key)
		}
	}
	for key := range b.watched {
		// Only a port nobody holds is forgotten: own may be older than the conflict
		// (read while the run that found the port taken was still starting).
		if !bound[key] {
			delete(b.watched, key)
		}
	}
	slices.SortFunc(ranged, byPort)
	out := append(watched, ranged[:min(len(ranged), v4.MaxBusyPorts-len(watched))]...)
	slices.SortFunc(out, byPort)
	b.current = out
	return slices.Clone(out), nil
}

func byPort(a, c v4.BusyPort) int {
	return cmp.Or(cmp.Compare(a.Port, c.Port), cmp.Compare(a.Protocol, c.Protocol))
}

func inRanges(ranges []v4.PortRange, port int) bool {
	for _, r := range ranges {
		if port >= r.Begin && port <= r.End {
			return true
		}
	}
	return false
}

// busyPortsLoop reads the busy ports now, every interval and whenever a start found
// ports taken, and sends them when they changed (or the last send failed).
func (a *Agent) busyPortsLoop(ctx context.Context) {
	t := time.NewTicker(a.cfg.BusyPortsInterval)
	defer t.Stop()
	failing := false
	for {
		err := a.refreshBusyPorts(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !failing:
			a.log.Warn("cannot report the node's busy ports; will retry", "err", err)
		case err == nil && failing:
			a.log.Info("the node's busy ports are reported again")
		}
		failing = err != nil
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.busyPorts.kick:
		}
	}
}

// refreshBusyPorts reads the busy ports and sends them if the server does not have them.
func (a *Agent) refreshBusyPorts(ctx context.Context) error {
	ports, err := a.busyPorts.read(a.ownPorts())
	if err != nil {
		return err
	}
	b := a.busyPorts
	b.mu.Lock()
	same := b.known && slices.Equal(b.sent, ports)
	b.mu.Unlock()
	if same {
		return nil
	}
	err = a.servers.do(ctx, func(c *client.Client) error { return c.AgentBusyPorts(ctx, a.cfg.NodeName, ports) })
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.sent, b.known = ports, true
	b.mu.Unlock()
	if len(ports) > 0 {
		a.log.Info("the node's busy ports changed", "ports", v4.PortsString(ports))
	}
	return nil
}

// ownPorts are the host ports of the task groups of the checkpoint (what the agent runs,
// also before a restarted agent adopted it, and while a deleted one is stopped), except
// those whose run ended: their sockets are berth's, which the scheduler accounts for
// itself. An ended run's ports are not: whatever holds them now is another program (it
// may be what made the run fail).
func (a *Agent) ownPorts() map[int]bool {
	own := map[int]bool{}
	ended := map[string]bool{}
	if a.exec != nil {
		for _, p := range a.exec.List() {
			if v4.Terminal(p.Status.Phase) {
				ended[tgKey(p.Namespace, p.Name)] = true
			}
		}
	}
	for _, key := range a.ckpt.keys() {
		if e, ok := a.ckpt.get(key); ok && !ended[key] {
			for _, port := range e.Ports {
				own[port.HostPort] = true
			}
		}
	}
	return own
}
