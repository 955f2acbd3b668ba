package artifacts

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"syscall"
	"time"
)

// A namespace's user writes the endpoint of an artifactrepository, and the server dials
// it: without a check, a user could make the server talk to its own etcd (on loopback
// or on one of its own addresses), the agents' API or a cloud's metadata service. The check is made on the address actually dialed
// (after name resolution), so a DNS name that resolves to a refused address is refused
// too. Servers whose S3 store is on a private network allow it with a flag
// (--artifact-allow-private-endpoints).

// refusedAddr reports why ip may not be dialed, "" when it may.
func refusedAddr(ip netip.Addr) string {
	ip = ip.Unmap().WithZone("")
	if nat64.Contains(ip) { // NAT64 reaches the IPv4 address it embeds
		b := ip.As16()
		if why := refusedAddr(netip.AddrFrom4([4]byte(b[12:]))); why != "" {
			return why + " (through NAT64)"
		}
	}
	switch {
	case !ip.IsValid():
		return "not an address"
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast():
		return "a link-local address"
	case ip.IsPrivate():
		return "a private address"
	case ip.IsUnspecified() || ip.Is4() && zeroNet.Contains(ip):
		return "an unspecified address" // Linux reaches 0.0.0.0/8 as the host itself
	case ip.IsMulticast() || ip.IsInterfaceLocalMulticast() || ip == broadcast:
		return "a multicast or broadcast address"
	case cgnat.Contains(ip):
		return "a shared (carrier-grade NAT) address"
	}
	// The server's own public addresses reach its API and etcd as loopback would.
	own, err := hostAddrs()
	if err != nil {
		return "not checked against the server's own addresses (" + err.Error() + ")"
	}
	if slices.Contains(own, ip) {
		return "the server's own address"
	}
	return ""
}

var (
	cgnat     = netip.MustParsePrefix("100.64.0.0/10")
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	zeroNet   = netip.MustParsePrefix("0.0.0.0/8")
	broadcast = netip.AddrFrom4([4]byte{255, 255, 255, 255})
)

// hostAddrs returns the addresses of the server's interfaces (a variable for tests).
var hostAddrs = func() ([]netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if pf, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, pf.Addr().Unmap().WithZone(""))
		}
	}
	return out, nil
}

// guardControl refuses, before connecting, the addresses refusedAddr names.
func guardControl(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("artifact repository endpoint: unexpected address %q", address)
	}
	if why := refusedAddr(ap.Addr()); why != "" {
		return fmt.Errorf("artifact repository endpoint %s is %s, which the server does not dial (allow it with --artifact-allow-private-endpoints)", address, why)
	}
	return nil
}

// NewTransport is the HTTP transport of the S3 clients: no proxy from the environment
// (a proxy would dial for us, past the check) and, unless allowPrivate, the address
// check on every connection.
func NewTransport(allowPrivate bool) *http.Transport {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = guardControl
	}
	return &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}
