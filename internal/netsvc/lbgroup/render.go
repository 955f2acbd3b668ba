package lbgroup

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// Settings are the parts of the configuration that come from the agent, not from the
// services.
type Settings struct {
	// BindAddr is the address the group listens on ("" for every address of the node).
	BindAddr string
	// HTTPPort is where HTTP ports are routed by virtual host and path (BCS: 80).
	HTTPPort int
	// Socket is the path of HAProxy's runtime API socket.
	Socket string
}

// minSlots is the fewest server lines of a backend: instances come and go through the
// runtime API within a backend's slots; only outgrowing them needs a reload.
const minSlots = 4

// backend is one HAProxy backend: a port of an exported service.
type backend struct {
	name    string
	mode    string // "http" or "tcp"
	balance string
	maxconn int
	slots   []slot
}

// slot is one server line; an empty addr is a disabled spare.
type slot struct {
	addr   string // "IP:port"
	weight int
}

// httpRoute sends the requests for vhost (any host when "") under path (any when "")
// to backend.
type httpRoute struct {
	vhost, path, backend string
}

// tcpListener forwards port to backend, a port of service namespace/service.
type tcpListener struct {
	port               int
	backend            string
	namespace, service string
}

// plan is what the group's HAProxy runs: its backends, HTTP routes and TCP listeners.
// conflicts lists the ports left out because another service of the group claimed
// their port or route first (admission refuses them; a group changed behind its back
// can still hold them).
type plan struct {
	backends  []*backend
	routes    []httpRoute
	listeners []tcpListener
	conflicts []string
}

// newPlan makes the plan of exports, keeping each instance in the slot prev gave it, so
// that an update of instances is a runtime change of the slots that changed.
func newPlan(exports []ExportService, s Settings, prev *plan) *plan {
	old := map[string]*backend{}
	if prev != nil {
		for _, b := range prev.backends {
			old[b.name] = b
		}
	}
	p := &plan{}
	routes := map[string]string{}
	ports := map[int]string{}
	for _, es := range exports {
		for _, ep := range es.Ports {
			name := fmt.Sprintf("%s.%s.%s", es.Namespace, es.Name, ep.Name)
			if ep.Protocol == "http" {
				if ep.Path == "/" {
					ep.Path = "" // every path, as none
				}
				route := ep.VHost + " " + ep.Path
				if other, ok := routes[route]; ok {
					p.conflicts = append(p.conflicts, fmt.Sprintf("%s: host %q path %q is %s's", name, ep.VHost, ep.Path, other))
					continue
				}
				routes[route] = name
				p.routes = append(p.routes, httpRoute{vhost: ep.VHost, path: ep.Path, backend: name})
			} else {
				if other, ok := ports[ep.ServicePort]; ok || ep.ServicePort == s.HTTPPort {
					if !ok {
						other = "the group's HTTP port"
					}
					p.conflicts = append(p.conflicts, fmt.Sprintf("%s: port %d is %s's", name, ep.ServicePort, other))
					continue
				}
				ports[ep.ServicePort] = name
				p.listeners = append(p.listeners, tcpListener{port: ep.ServicePort, backend: name, namespace: es.Namespace, service: es.Name})
			}
			b := &backend{name: name, mode: ep.Protocol, balance: es.Balance, maxconn: es.MaxConn}
			b.slots = placeBackends(old[name], ep.Backends)
			p.backends = append(p.backends, b)
		}
	}
	// The most specific route first: a host before any host, a longer path first.
	slices.SortStableFunc(p.routes, func(a, b httpRoute) int {
		return cmp.Or(-cmp.Compare(min(len(a.vhost), 1), min(len(b.vhost), 1)), -cmp.Compare(len(a.path), len(b.path)))
	})
	return p
}

// placeBackends puts bes in slots: an instance keeps the slot it had in old; new ones
// take the spares that were spare before (so a connection to a removed instance is not
// followed by a new instance in its slot at once), then the freed ones. The slots grow
// to the next power of two when they are too few.
func placeBackends(old *backend, bes []Backend) []slot {
	n := minSlots
	if old != nil {
		n = max(n, len(old.slots))
	}
	for n < len(bes) {
		n *= 2
	}
	out := make([]slot, n)
	placed := make([]bool, len(bes))
	if old != nil && len(old.slots) == n {
		at := map[string]int{}
		for i, s := range old.slots {
			if s.addr != "" {
				at[s.addr] = i
			}
		}
		for j, be := range bes {
			if i, ok := at[addrOf(be)]; ok {
				out[i] = slot{addr: addrOf(be), weight: be.Weight}
				placed[j] = true
			}
		}
	}
	wasSpare := func(i int) bool { return old == nil || len(old.slots) != n || old.slots[i].addr == "" }
	for pass := range 2 {
		i := 0
		for j, be := range bes {
			if placed[j] {
				continue
			}
			for i < n && (out[i].addr != "" || pass == 0 && !wasSpare(i)) {
				i++
			}
			if i == n {
				break
			}
			out[i] = slot{addr: addrOf(be), weight: be.Weight}
			placed[j] = true
		}
	}
	return out
}

func addrOf(b Backend) string { return net.JoinHostPort(b.IP, strconv.Itoa(b.Port)) }

// spareAddr is where a spare slot points: HAProxy needs an address for it, and it takes
// no traffic while disabled.
const spareAddr = "127.0.0.1:9"

// render writes the plan as HAProxy's configuration. shape is the same text with the
// slots' addresses and weights left out: two plans of one shape differ only in what the
// runtime API can change.
func render(p *plan, s Settings) (config, shape string) {
	var full, sh strings.Builder
	both := func(format string, args ...any) {
		fmt.Fprintf(&full, format, args...)
		fmt.Fprintf(&sh, format, args...)
	}
	both("# Written by berth's agent for its load-balancer group; changes are overwritten.\n")
	both("global\n")
	// No global maxconn: HAProxy derives it from the file descriptors it may open.
	both("    stats socket %s mode 600 level admin expose-fd listeners\n\n", s.Socket)
	both("defaults\n")
	both("    mode tcp\n    timeout connect 5s\n    timeout client 60s\n    timeout server 60s\n")
	both("    timeout http-request 10s\n    timeout http-keep-alive 10s\n")
	both("    retries 3\n    option redispatch 1\n\n")
	if len(p.routes) > 0 {
		both("frontend http\n    mode http\n    bind %s\n", bindAddr(s.BindAddr, s.HTTPPort))
		for _, r := range p.routes {
			var conds []string
			if r.vhost != "" {
				conds = append(conds, "{ hdr(host),field(1,:) -i "+r.vhost+" }")
			}
			if r.path != "" && r.path != "/" {
				conds = append(conds, "{ path_beg "+r.path+" }")
			}
			if len(conds) == 0 {
				both("    default_backend %s\n", r.backend)
				continue
			}
			both("    use_backend %s if %s\n", r.backend, strings.Join(conds, " "))
		}
		both("\n")
	}
	for _, l := range p.listeners {
		both("frontend tcp-%d\n    mode tcp\n    bind %s\n    default_backend %s\n\n", l.port, bindAddr(s.BindAddr, l.port), l.backend)
	}
	for _, b := range p.backends {
		both("backend %s\n    mode %s\n", b.name, b.mode)
		switch b.balance {
		case "source":
			both("    balance source\n    hash-type consistent\n")
		default:
			both("    balance %s\n", b.balance)
		}
		if b.mode == "http" {
			both("    retry-on all-retryable-errors\n")
		}
		for i, sl := range b.slots {
			addr, weight, off := sl.addr, sl.weight, ""
			if addr == "" {
				addr, weight, off = spareAddr, 0, " disabled"
			}
			fmt.Fprintf(&full, "    server s%d %s weight %d maxconn %d%s\n", i, addr, weight, b.maxconn, off)
			fmt.Fprintf(&sh, "    server s%d maxconn %d\n", i, b.maxconn)
		}
		both("\n")
	}
	return full.String(), sh.String()
}

func bindAddr(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }
