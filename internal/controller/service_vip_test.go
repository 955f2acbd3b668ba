package controller

import (
	"errors"
	"net/netip"
	"testing"
)

func TestVIPAllocator(t *testing.T) {
	v, err := newVIPAllocator(netip.MustParsePrefix("10.9.0.0/29")) // 6 usable
	if err != nil {
		t.Fatal(err)
	}
	if !v.reserve("10.9.0.3") || v.reserve("10.9.0.3") || v.reserve("10.9.0.0") || v.reserve("10.9.0.7") || v.reserve("10.8.0.1") {
		t.Fatal("reserve accepted a taken, network, broadcast or outside address, or refused a free one")
	}
	got := map[string]bool{}
	for range 5 {
		ip, err := v.allocate()
		if err != nil {
			t.Fatal(err)
		}
		if got[ip] || ip == "10.9.0.3" || ip == "10.9.0.0" || ip == "10.9.0.7" {
			t.Fatalf("allocated %s twice or a reserved one (%v)", ip, got)
		}
		got[ip] = true
	}
	if _, err := v.allocate(); !errors.Is(err, errVIPsExhausted) {
		t.Fatalf("a full range allocated: %v", err)
	}
	v.release("10.9.0.5")
	if ip, err := v.allocate(); err != nil || ip != "10.9.0.5" {
		t.Fatalf("after a release: %s, %v", ip, err)
	}
	for _, bad := range []string{"fd00::/64", "10.0.0.0/31"} {
		if _, err := newVIPAllocator(netip.MustParsePrefix(bad)); err == nil {
			t.Errorf("range %s accepted", bad)
		}
	}
}
