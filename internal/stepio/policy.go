// Package stepio is the agent's side of a workflow step's inputs and outputs
// (v4.StepIO, docs/workflows.md "Inputs and outputs"): it stages inputs (from the
// artifact repository, inline, over HTTP or from git) before a step's tasks start and
// collects output parameters, standard output, artifacts and the log after its main
// task exits. The agent runs as root and every path and URL it is given is a user's:
// files are read and written through an os.Root (or the container engine's copy API,
// which is confined to the container), archives are unpacked with bounds and without
// escaping entries, and HTTP and git fetches dial only addresses the Policy allows.
package stepio

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"syscall"
	"time"
)

// Policy says where a step's http and git inputs may be fetched from. By default a
// fetch may not reach loopback, link-local (a cloud's metadata endpoint), unspecified,
// multicast or broadcast addresses, nor the node's own: a namespace's user must not make
// the root agent read etcd, the agent API or credentials of the node.
type Policy struct {
	// Allow lists networks a fetch may reach although the rules above refuse them (an
	// artifact server on the node, tests on loopback).
	Allow []netip.Prefix
	// GitProtocols are git transports allowed besides https: "http", "git", "ssh".
	GitProtocols []string
	// NodeAddrs returns the node's own addresses (default: every interface's).
	NodeAddrs func() ([]netip.Addr, error)
	// Timeout bounds one fetch, connection and transfer (default DefaultFetchTimeout).
	Timeout time.Duration
	// MaxFetchBytes bounds what one git clone over http or https downloads (default
	// DefaultLimits.Bytes).
	MaxFetchBytes int64
}

// DefaultFetchTimeout bounds one http or git input.
const DefaultFetchTimeout = 10 * time.Minute

// ErrRefused is wrapped by the error of a dial the policy refuses.
var ErrRefused = errors.New("address refused by the agent's fetch policy")

// nat64 is the well-known NAT64 prefix, whose addresses embed an IPv4 address.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// zeroNet is 0.0.0.0/8, which Linux reaches as the host itself.
var zeroNet = netip.MustParsePrefix("0.0.0.0/8")

// Check reports why the policy refuses ip, nil when it may be dialled.
func (p *Policy) Check(ip netip.Addr) error {
	ip = ip.Unmap().WithZone("")
	for _, pf := range p.Allow {
		if pf.Contains(ip) {
			return nil
		}
	}
	if ip.Is6() && nat64.Contains(ip) {
		b := ip.As16()
		if err := p.Check(netip.AddrFrom4([4]byte(b[12:]))); err != nil {
			return err
		}
	}
	switch {
	case !ip.IsValid():
		return fmt.Errorf("%w: not an address", ErrRefused)
	case ip.IsLoopback():
		return fmt.Errorf("%w: %s is a loopback address", ErrRefused, ip)
	case ip.IsLinkLocalUnicast():
		return fmt.Errorf("%w: %s is link-local (a metadata endpoint lives there)", ErrRefused, ip)
	case ip.IsUnspecified() || ip.Is4() && zeroNet.Contains(ip):
		return fmt.Errorf("%w: %s is unspecified", ErrRefused, ip)
	case ip.IsMulticast() || ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return fmt.Errorf("%w: %s is multicast or broadcast", ErrRefused, ip)
	}
	own, err := p.nodeAddrs()
	if err != nil {
		return fmt.Errorf("%w: the node's addresses are not known: %v", ErrRefused, err)
	}
	if slices.Contains(own, ip) {
		return fmt.Errorf("%w: %s is the node's own address", ErrRefused, ip)
	}
	return nil
}

func (p *Policy) nodeAddrs() ([]netip.Addr, error) {
	if p.NodeAddrs != nil {
		return p.NodeAddrs()
	}
	return InterfaceAddrs()
}

// InterfaceAddrs are the addresses of every interface of the host.
func InterfaceAddrs() ([]netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range addrs {
		if pf, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, pf.Addr().Unmap().WithZone(""))
		}
	}
	return out, nil
}

// Dialer is a dialer that checks every address it connects to, after name resolution
// (a name that resolves to a refused address, or is rebound to one, is refused too).
func (p *Policy) Dialer() *net.Dialer {
	return &net.Dialer{
		Timeout: 30 * time.Second,
		ControlContext: func(_ context.Context, network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %s: %v", ErrRefused, address, err)
			}
			return p.Check(ap.Addr())
		},
	}
}

// checkHost resolves host and checks every address: for the transports (git://, ssh)
// whose connections the agent does not make itself.
func (p *Policy) checkHost(ctx context.Context, host string) error {
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", host, err)
	}
	for _, a := range addrs {
		if err := p.Check(a); err != nil {
			return fmt.Errorf("%s: %w", host, err)
		}
	}
	return nil
}

func (p *Policy) timeout() time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return DefaultFetchTimeout
}
