package controller

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
)

// DefaultServiceCIDR is the range services' virtual IPs come from.
var DefaultServiceCIDR = netip.MustParsePrefix("10.254.0.0/16")

// errVIPsExhausted is returned when every address of the range is taken.
var errVIPsExhausted = errors.New("every virtual IP of the service range is taken")

// vipAllocator hands out the virtual IPs of a range (IPv4), each once: the service
// controller reserves those its endpoints objects hold when it starts, then allocates
// for new services and releases with deleted ones. The network and broadcast addresses
// are never given.
type vipAllocator struct {
	prefix netip.Prefix
	base   uint32
	size   uint32

	mu   sync.Mutex
	used map[uint32]bool
	next uint32
}

func newVIPAllocator(p netip.Prefix) (*vipAllocator, error) {
	p = p.Masked()
	if !p.Addr().Is4() || p.Bits() > 30 {
		return nil, fmt.Errorf("service range %s: give an IPv4 range of at least 4 addresses (a /30 or larger)", p)
	}
	a := p.Addr().As4()
	return &vipAllocator{prefix: p, base: binary.BigEndian.Uint32(a[:]), size: 1 << (32 - p.Bits()),
		used: map[uint32]bool{}, next: 1}, nil
}

// offset returns the position of ip in the range (false when outside, or the network or
// broadcast address).
func (v *vipAllocator) offset(ip string) (uint32, bool) {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is4() || !v.prefix.Contains(a) {
		return 0, false
	}
	b := a.As4()
	off := binary.BigEndian.Uint32(b[:]) - v.base
	return off, off > 0 && off < v.size-1
}

// reserve marks ip as taken; false when it is not a VIP of the range or taken already.
func (v *vipAllocator) reserve(ip string) bool {
	off, ok := v.offset(ip)
	if !ok {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.used[off] {
		return false
	}
	v.used[off] = true
	return true
}

// allocate takes the next free VIP after the last one given, so a released one is not
// given again at once (clients may still hold it).
func (v *vipAllocator) allocate() (string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for range v.size {
		off := v.next
		v.next++
		if v.next >= v.size-1 {
			v.next = 1
		}
		if off == 0 || off >= v.size-1 || v.used[off] {
			continue
		}
		v.used[off] = true
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], v.base+off)
		return netip.AddrFrom4(b).String(), nil
	}
	return "", fmt.Errorf("%w (%s)", errVIPsExhausted, v.prefix)
}

// release frees ip.
func (v *vipAllocator) release(ip string) {
	if off, ok := v.offset(ip); ok {
		v.mu.Lock()
		delete(v.used, off)
		v.mu.Unlock()
	}
}
