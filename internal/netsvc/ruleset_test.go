package netsvc

import "testing"

// A delta touches what changed only: the elements of the VIP:ports that went, changed
// or came, the dispatch chain that came first and the one left unused last.
func TestRulesetDelta(t *testing.T) {
	fw := func(vip, proto, port, chain string, backends ...string) forward {
		return forward{key: vip + " . " + proto + " . " + port, proto: proto, slotKey: vip + " . " + port, chain: chain, backends: backends}
	}
	a := fw("10.254.0.1", "tcp", "80", "tcp_rr_2", "10.0.0.1 . 80", "10.0.0.2 . 80")
	b := fw("10.254.0.2", "tcp", "80", "tcp_rr_1", "10.0.0.3 . 80")
	c := fw("10.254.0.3", "tcp", "80", "tcp_rr_2", "10.0.0.4 . 80", "10.0.0.5 . 80")
	_, st := renderFull([]forward{a, b, c})

	a2 := fw("10.254.0.1", "tcp", "80", "tcp_rr_2", "10.0.0.1 . 80", "10.0.0.9 . 80") // one instance replaced
	d := fw("10.254.0.4", "udp", "53", "udp_sh_3", "10.0.0.6 . 53", "10.0.0.7 . 53", "10.0.0.8 . 53")
	next := []forward{a2, c, d} // b went
	want := "add chain ip berth udp_sh_3\nadd rule ip berth udp_sh_3 " + dispatchRule("udp_sh_3") + "\n" +
		"delete element ip berth services { 10.254.0.2 . tcp . 80 }\n" +
		"delete element ip berth backends_tcp { 10.254.0.1 . 80 . 1, 10.254.0.2 . 80 . 0 }\n" +
		"add element ip berth backends_udp { 10.254.0.4 . 53 . 0 : 10.0.0.6 . 53, 10.254.0.4 . 53 . 1 : 10.0.0.7 . 53, 10.254.0.4 . 53 . 2 : 10.0.0.8 . 53 }\n" +
		"add element ip berth backends_tcp { 10.254.0.1 . 80 . 1 : 10.0.0.9 . 80 }\n" +
		"add element ip berth services { 10.254.0.4 . udp . 53 : goto udp_sh_3 }\n" +
		"delete chain ip berth tcp_rr_1\n"
	if delta := renderDelta(st, next); delta != want {
		t.Errorf("delta:\n%s\nwant:\n%s", delta, want)
	}
	if again := renderDelta(st, next); again != "" {
		t.Errorf("no change gave a delta:\n%s", again)
	}
}

// Each dispatch chain picks a slot of its own number, by its own means, in its
// protocol's map.
func TestDispatchRule(t *testing.T) {
	for _, tc := range []struct {
		proto    string
		bySource bool
		n        int
		want     string
	}{
		{"tcp", false, 3, "meta mark set 0x62657274 dnat ip addr . port to ip daddr . tcp dport . numgen inc mod 3 map @backends_tcp"},
		{"udp", true, 10000, "meta mark set 0x62657274 dnat ip addr . port to ip daddr . udp dport . jhash ip saddr mod 10000 map @backends_udp"},
	} {
		if got := dispatchRule(dispatchChain(tc.proto, tc.bySource, tc.n)); got != tc.want {
			t.Errorf("dispatchRule(%s, %v, %d) = %q, want %q", tc.proto, tc.bySource, tc.n, got, tc.want)
		}
	}
}
