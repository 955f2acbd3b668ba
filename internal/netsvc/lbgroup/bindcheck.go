package lbgroup

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// A load-balancer group is shared by the services of every namespace exported to it, and
// HAProxy starts either with every listener of its configuration or not at all: one port
// another program holds would keep every other service of the group, of any tenant,
// from being served. So each frontend's port is tried before HAProxy is, and one that
// cannot be bound is left out of the configuration and reported on its own service,
// while the rest is served (docs/services.md, "Load-balancer groups").

// unbound is a frontend left out because its port cannot be bound on the node.
type unbound struct {
	namespace, service string // "" for the group's HTTP frontend
	port               int
	err                error
}

// key identifies a frontend left out, to report it once while it stays out.
func (u unbound) key() string {
	return fmt.Sprintf("%s/%s:%d", u.namespace, u.service, u.port)
}

// bindProbe says why port cannot be bound on host (nil when it can).
type bindProbe func(host string, port int) error

// probeBind binds a socket to host:port and closes it, never listening, so no connection
// can reach it. It sets SO_REUSEADDR and SO_REUSEPORT as HAProxy does on its listeners:
// a port the group's own HAProxy holds (same user, reuseport) binds, one held by another
// program does not, exactly as HAProxy's own bind would go.
func probeBind(host string, port int) error {
	addr := netip.IPv4Unspecified()
	if host != "" {
		a, err := netip.ParseAddr(host)
		if err != nil {
			return nil // a name: HAProxy resolves it, and its start says what fails
		}
		addr = a.Unmap()
	}
	family, sa := unix.AF_INET, unix.Sockaddr(&unix.SockaddrInet4{Port: port, Addr: addr.As4()})
	if addr.Is6() {
		family, sa = unix.AF_INET6, &unix.SockaddrInet6{Port: port, Addr: addr.As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	for _, opt := range []int{unix.SO_REUSEADDR, unix.SO_REUSEPORT} {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, 1); err != nil {
			return fmt.Errorf("setsockopt: %w", err)
		}
	}
	if err := unix.Bind(fd, sa); err != nil {
		return fmt.Errorf("bind %s: %w", bindAddr(host, port), err)
	}
	return nil
}

// leaveOut removes from p the frontends whose port probe refuses (or that failed, from
// an earlier start: failed), with the backends only they used, and returns them. Ports
// in served are handed over by the running HAProxy (-x) and not tried.
func (p *plan) leaveOut(s Settings, served map[int]bool, probe bindProbe, failed map[int]error) []unbound {
	why := func(port int) error {
		if err, ok := failed[port]; ok {
			return err
		}
		if served[port] {
			return nil
		}
		return probe(s.BindAddr, port)
	}
	var out []unbound
	drop := map[string]bool{}
	if len(p.routes) > 0 {
		if err := why(s.HTTPPort); err != nil {
			out = append(out, unbound{port: s.HTTPPort, err: err})
			for _, r := range p.routes {
				drop[r.backend] = true
			}
			p.routes = nil
		}
	}
	p.listeners = slices.DeleteFunc(p.listeners, func(l tcpListener) bool {
		err := why(l.port)
		if err != nil {
			out = append(out, unbound{namespace: l.namespace, service: l.service, port: l.port, err: err})
			drop[l.backend] = true
		}
		return err != nil
	})
	p.backends = slices.DeleteFunc(p.backends, func(b *backend) bool { return drop[b.name] })
	return out
}

// servedPorts are the ports the running HAProxy listens on, as far as the group knows.
func servedPorts(cur *plan, s Settings) map[int]bool {
	out := map[int]bool{}
	if cur == nil {
		return out
	}
	if len(cur.routes) > 0 {
		out[s.HTTPPort] = true
	}
	for _, l := range cur.listeners {
		out[l.port] = true
	}
	return out
}

// bindFailure finds HAProxy's refusals to bind a frontend in its start's message:
// "Binding [haproxy.cfg:9] for frontend tcp-5432: cannot bind socket (Address already in
// use) for [0.0.0.0:5432]" (2.6), "Starting frontend tcp-5432: cannot bind socket" (older).
var bindFailure = regexp.MustCompile(`(?:frontend|proxy) (tcp-(\d+)|http): cannot bind socket([^\n]*)`)

// failedBinds returns the ports of the frontends HAProxy's message says it could not
// bind, with the reason, so a start that lost a race for a port (another program took it
// after the probe) is tried again without them.
func failedBinds(msg string, s Settings) map[int]error {
	out := map[int]error{}
	for _, m := range bindFailure.FindAllStringSubmatch(msg, -1) {
		port := s.HTTPPort
		if m[2] != "" {
			n, err := strconv.Atoi(m[2])
			if err != nil {
				continue
			}
			port = n
		}
		out[port] = fmt.Errorf("haproxy: cannot bind socket%s", m[3])
	}
	return out
}
