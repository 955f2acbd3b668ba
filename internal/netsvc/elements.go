package netsvc

import (
	"encoding/binary"
	"net/netip"
)

// The proxy's map keys and values, byte for byte as the kernel holds them, so that a
// state kept in strings goes to netlink without another conversion: each field of a
// concatenation takes a whole number of 32-bit registers (zero padded), addresses and
// ports in network order, a slot (what numgen and jhash leave in a register) in the
// machine's order.

// servicesKey is VIP . protocol . port, the services map's key.
func servicesKey(vip netip.Addr, proto string, port uint16) string {
	b := make([]byte, 12)
	a := vip.As4()
	copy(b, a[:])
	b[4] = protocolNumber(proto)
	binary.BigEndian.PutUint16(b[8:], port)
	return string(b)
}

// vipPortKey is VIP . port, the part of a backends key before the slot.
func vipPortKey(vip netip.Addr, port uint16) string {
	b := make([]byte, 8)
	a := vip.As4()
	copy(b, a[:])
	binary.BigEndian.PutUint16(b[4:], port)
	return string(b)
}

// backendKey is VIP . port . slot, a backends map's key.
func backendKey(vipPort string, slot int) string {
	return string(binary.NativeEndian.AppendUint32([]byte(vipPort), uint32(slot)))
}

// backendValue is address . port, a backends map's value: where the destination is
// translated to.
func backendValue(ap netip.AddrPort) string {
	b := make([]byte, 8)
	a := ap.Addr().As4()
	copy(b, a[:])
	binary.BigEndian.PutUint16(b[4:], ap.Port())
	return string(b)
}

// protocolNumber is the IP protocol number of a forwarded protocol's name.
func protocolNumber(name string) byte {
	for _, p := range protocols {
		if p.name == name {
			return p.number
		}
	}
	return 0
}
