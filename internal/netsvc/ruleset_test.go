package netsvc

import (
	"net/netip"
	"reflect"
	"slices"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
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

// Each port of a service with a VIP is forwarded to its ready instances, or, without
// one, refused (its key in the no_endpoints map); a service without a VIP has no
// element. An instance that comes or goes moves the VIP:port between the two maps.
func TestRulesetRefusesWithoutInstances(t *testing.T) {
	web := &v4.Service{Metadata: v4.ObjectMeta{Name: "web", Namespace: "demo"}, Spec: v4.ServiceSpec{
		Ports: []v4.ServicePort{{Name: "http", Protocol: "http", ServicePort: 80}, {Name: "stats", Protocol: "udp", ServicePort: 9125}}}}
	ep := func(vip string, backends ...string) *v4.Endpoints {
		e := &v4.Endpoints{Metadata: web.Metadata, VIP: vip}
		for _, b := range backends {
			ap := netip.MustParseAddrPort(b)
			e.Endpoints = append(e.Endpoints, v4.Endpoint{Ports: []v4.EndpointPort{{Name: "http", IP: ap.Addr().String(), Port: int(ap.Port())}}})
		}
		return e
	}
	vip := netip.MustParseAddr("10.254.0.1")
	httpKey, statsKey := servicesKey(vip, "tcp", 80), servicesKey(vip, "udp", 9125)
	tests := []struct {
		name      string
		ep        *v4.Endpoints
		services  map[string]string
		refused   map[string]string
		instances int
	}{
		{"no instance", ep("10.254.0.1"), map[string]string{}, map[string]string{httpKey: rejectChain, statsKey: rejectChain}, 0},
		{"one instance of one port", ep("10.254.0.1", "10.0.0.1:8080"), map[string]string{httpKey: "tcp_rand_1"}, map[string]string{statsKey: rejectChain}, 1},
		{"no VIP", ep("", "10.0.0.1:8080"), map[string]string{}, map[string]string{}, 0},
		{"no endpoints", nil, map[string]string{}, map[string]string{}, 0},
	}
	for _, tt := range tests {
		st := stateOf(forwards([]ServiceView{{Service: web, Endpoints: tt.ep}}))
		if !reflect.DeepEqual(st.maps[servicesMap], tt.services) || !reflect.DeepEqual(st.maps[noEndpointsMap], tt.refused) ||
			len(st.maps[backendsMap("tcp")]) != tt.instances || st.chains[rejectChain] != 0 {
			t.Errorf("%s: services %q, no_endpoints %q, backends %d, chains %v", tt.name, st.maps[servicesMap], st.maps[noEndpointsMap],
				len(st.maps[backendsMap("tcp")]), st.chains)
		}
	}

	st := stateOf(forwards([]ServiceView{{Service: web, Endpoints: ep("10.254.0.1")}}))
	came := diff(st, forwards([]ServiceView{{Service: web, Endpoints: ep("10.254.0.1", "10.0.0.1:8080")}}))
	if !slices.Equal(came.deletes[noEndpointsMap], []string{httpKey}) || came.adds[servicesMap][httpKey] != "tcp_rand_1" ||
		len(came.adds[noEndpointsMap]) != 0 || !slices.Equal(came.addChains, []string{"tcp_rand_1"}) {
		t.Errorf("an instance came: %+v", came)
	}
	went := diff(st, forwards([]ServiceView{{Service: web, Endpoints: ep("10.254.0.1")}}))
	if came := went.adds[noEndpointsMap][httpKey]; came != rejectChain || !slices.Equal(went.deletes[servicesMap], []string{httpKey}) ||
		!slices.Equal(went.delChains, []string{"tcp_rand_1"}) {
		t.Errorf("the instance went: %+v", went)
	}
}
