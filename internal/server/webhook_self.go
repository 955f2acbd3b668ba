package server

import (
	"net"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
)

// ownAPI knows where this server's API answers, so that no admission webhook is the
// API itself: a hook that calls back into the API would admit its own writes in a loop,
// and a review carries the user's object and policies, which must not come back in
// through another door. It is checked twice: on the configuration's URL (its host and
// port) when it is written, and on every address a call dials (a name that resolves to
// the API later).
type ownAPI struct {
	mu    sync.Mutex
	ports []int
	names []string // host names and literal addresses of the listen address and SANs
}

func newOwnAPI(cfg Config) *ownAPI {
	o := &ownAPI{}
	dns, ips := servingNames(cfg.Listen, cfg.TLSSANs)
	o.names = append(o.names, dns...)
	for _, ip := range ips {
		o.names = append(o.names, ip.String())
	}
	if host, port, err := net.SplitHostPort(cfg.Listen); err == nil {
		o.names = append(o.names, host) // "" or an unspecified address: every address
		o.addPort(port)
	}
	return o
}

// listening adds a listener's address (its port is known only once it listens).
func (o *ownAPI) listening(addr net.Addr) {
	if addr == nil {
		return
	}
	if host, port, err := net.SplitHostPort(addr.String()); err == nil {
		o.addPort(port)
		o.mu.Lock()
		o.names = append(o.names, host)
		o.mu.Unlock()
	}
}

func (o *ownAPI) addPort(port string) {
	n, err := strconv.Atoi(port)
	if err != nil || n == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !slices.Contains(o.ports, n) {
		o.ports = append(o.ports, n)
	}
}

// isOwnURL reports whether u names the API: a port the API listens on, at one of its
// names or a local address.
func (o *ownAPI) isOwnURL(u *url.URL) bool {
	port := u.Port()
	if port == "" {
		port = "443"
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		return o.isOwnAddr(net.JoinHostPort(ip.String(), port))
	}
	n, _ := strconv.Atoi(port)
	o.mu.Lock()
	defer o.mu.Unlock()
	if !slices.Contains(o.ports, n) {
		return false
	}
	h, _ := os.Hostname()
	return host == h || slices.Contains(o.names, host)
}

// isOwnAddr reports whether a dialed ip:port is the API: a port it listens on at a
// loopback, unspecified or local interface address, or at one of its names.
func (o *ownAPI) isOwnAddr(addr string) bool {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return false
	}
	o.mu.Lock()
	own := slices.Contains(o.ports, int(ap.Port())) && slices.Contains(o.names, ap.Addr().Unmap().String())
	listens := slices.Contains(o.ports, int(ap.Port()))
	o.mu.Unlock()
	if own {
		return true
	}
	if !listens {
		return false
	}
	ip := ap.Addr().Unmap()
	if ip.IsLoopback() || ip.IsUnspecified() {
		// The API listens on its loopback address (or all of them) by default; another
		// loopback address with the same port is the same socket only when the API
		// listens on every address.
		return o.listensEverywhere() || ip == netip.MustParseAddr("127.0.0.1") || ip == netip.IPv6Loopback()
	}
	return o.listensEverywhere() && isLocalAddr(ip)
}

func (o *ownAPI) listensEverywhere() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.ContainsFunc(o.names, func(n string) bool { return n == "0.0.0.0" || n == "::" || n == "" })
}

func isLocalAddr(ip netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Unmap() == ip {
			return true
		}
	}
	return false
}
