package artifacts

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// A namespace's user writes the endpoint of an artifactrepository, and the server dials
// it: without a check, a user could make the server talk to its own etcd, the agents'
// API or a cloud's metadata service. The check is made on the address actually dialed
// (after name resolution), so a DNS name that resolves to a refused address is refused
// too. Servers whose S3 store is on a private network allow it with a flag
// (--artifact-allow-private-endpoints).

// refusedAddr reports why ip may not be dialed, "" when it may.
func refusedAddr(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast():
		return "a link-local address"
	case ip.IsPrivate():
		return "a private address"
	case ip.IsUnspecified():
		return "an unspecified address"
	case ip.IsMulticast() || ip.IsInterfaceLocalMulticast():
		return "a multicast address"
	case cgnat.Contains(ip):
		return "a shared (carrier-grade NAT) address"
	}
	return ""
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

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
