package netsvc

import (
	"net/netip"
	"reflect"
	"testing"
)

// fwd is a forward of VIP:port/proto to backends ("ip:port"), by chain.
func fwd(vipPort, proto, chain string, backends ...string) forward {
	ap := netip.MustParseAddrPort(vipPort)
	f := forward{key: servicesKey(ap.Addr(), proto, ap.Port()), proto: proto, vipPort: vipPortKey(ap.Addr(), ap.Port()), chain: chain}
	for _, b := range backends {
		f.backends = append(f.backends, backendValue(netip.MustParseAddrPort(b)))
	}
	return f
}

// A change touches what changed only: the elements of the VIP:ports that went, changed
// or came, the dispatch chain that came and the one left unused.
func TestRulesetDiff(t *testing.T) {
	a := fwd("10.254.0.1:80", "tcp", "tcp_rand_2", "10.0.0.1:80", "10.0.0.2:80")
	b := fwd("10.254.0.2:80", "tcp", "tcp_rand_1", "10.0.0.3:80")
	c := fwd("10.254.0.3:80", "tcp", "tcp_rand_2", "10.0.0.4:80", "10.0.0.5:80")
	st := stateOf([]forward{a, b, c})

	a2 := fwd("10.254.0.1:80", "tcp", "tcp_rand_2", "10.0.0.1:80", "10.0.0.9:80") // one instance replaced
	d := fwd("10.254.0.4:53", "udp", "udp_hash_3", "10.0.0.6:53", "10.0.0.7:53", "10.0.0.8:53")
	next := []forward{a2, c, d} // b went
	want := &tableChange{
		addChains: []string{"udp_hash_3"},
		deletes: map[string][]string{
			servicesMap:        {b.key},
			backendsMap("tcp"): sorted(backendKey(a.vipPort, 1), backendKey(b.vipPort, 0)),
		},
		adds: map[string]map[string]string{
			servicesMap:        {d.key: "udp_hash_3"},
			backendsMap("tcp"): {backendKey(a.vipPort, 1): a2.backends[1]},
			backendsMap("udp"): {backendKey(d.vipPort, 0): d.backends[0], backendKey(d.vipPort, 1): d.backends[1], backendKey(d.vipPort, 2): d.backends[2]},
		},
		delChains: []string{"tcp_rand_1"},
	}
	if got := diff(st, next); !reflect.DeepEqual(got, want) {
		t.Errorf("diff:\n%+v\nwant:\n%+v", got, want)
	}
	if again := diff(st, next); !again.empty() {
		t.Errorf("no change gave a change: %+v", again)
	}
}

func sorted(keys ...string) []string {
	if keys[0] > keys[1] {
		keys[0], keys[1] = keys[1], keys[0]
	}
	return keys
}

// The elements are as the kernel holds them: addresses and ports in network order,
// each field padded to 32 bits, the slot in the machine's order.
func TestElementEncoding(t *testing.T) {
	vip := netip.MustParseAddr("10.254.0.1")
	for _, tc := range []struct{ name, got, want string }{
		{"services key", servicesKey(vip, "udp", 53), "\x0a\xfe\x00\x01\x11\x00\x00\x00\x00\x35\x00\x00"},
		{"backends value", backendValue(netip.MustParseAddrPort("10.0.0.2:8080")), "\x0a\x00\x00\x02\x1f\x90\x00\x00"},
		{"backends key", backendKey(vipPortKey(vip, 80), 0), "\x0a\xfe\x00\x01\x00\x50\x00\x00\x00\x00\x00\x00"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %x, want %x", tc.name, tc.got, tc.want)
		}
	}
}

// Each dispatch chain's name gives its protocol, balancing and number of slots back.
func TestDispatchChainNames(t *testing.T) {
	for _, tc := range []struct {
		proto    string
		bySource bool
		n        int
	}{{"tcp", false, 3}, {"udp", true, 10000}} {
		proto, bySource, n, err := parseDispatchChain(dispatchChain(tc.proto, tc.bySource, tc.n))
		if err != nil || proto != tc.proto || bySource != tc.bySource || int(n) != tc.n {
			t.Errorf("%s %v %d read back as %s %v %d (%v)", tc.proto, tc.bySource, tc.n, proto, bySource, n, err)
		}
	}
	for _, bad := range []string{"prerouting", "tcp_rand_0", "tcp_xx_3", "tcp_rand_x"} {
		if _, _, _, err := parseDispatchChain(bad); err == nil {
			t.Errorf("%q read as a dispatch chain", bad)
		}
	}
}
