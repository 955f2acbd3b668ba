package stepio

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
)

// noNodeAddrs is a policy whose node has only 10.1.2.3, so that tests do not depend on
// the machine's interfaces.
func testPolicy(allow ...string) *Policy {
	p := &Policy{NodeAddrs: func() ([]netip.Addr, error) { return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil }}
	for _, a := range allow {
		p.Allow = append(p.Allow, netip.MustParsePrefix(a))
	}
	return p
}

func TestPolicyCheck(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		allow string
		ok    bool
	}{
		{"127.0.0.1", "", false},
		{"127.9.9.9", "", false},
		{"::1", "", false},
		{"::ffff:127.0.0.1", "", false},
		{"169.254.169.254", "", false}, // a cloud's metadata endpoint
		{"fe80::1", "", false},
		{"0.0.0.0", "", false},
		{"0.1.2.3", "", false},
		{"::", "", false},
		{"224.0.0.1", "", false},
		{"ff02::1", "", false},
		{"255.255.255.255", "", false},
		{"10.1.2.3", "", false}, // the node's own
		{"64:ff9b::7f00:1", "", false},
		{"10.1.2.4", "", true},
		{"93.184.216.34", "", true},
		{"2606:2800:220:1::1", "", true},
		{"127.0.0.1", "127.0.0.0/8", true},
		{"10.1.2.3", "10.1.2.3/32", true},
	} {
		p := testPolicy()
		if tc.allow != "" {
			p = testPolicy(tc.allow)
		}
		err := p.Check(netip.MustParseAddr(tc.addr))
		if (err == nil) != tc.ok {
			t.Errorf("%s (allow %q): got %v, want ok=%v", tc.addr, tc.allow, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrRefused) {
			t.Errorf("%s: %v does not wrap ErrRefused", tc.addr, err)
		}
	}
}

// TestPolicyDialer dials a real listener on loopback: refused by default, reached when
// loopback is allowed; a name that resolves to loopback is refused too.
func TestPolicyDialer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ctx := context.Background()
	for _, addr := range []string{ln.Addr().String(), net.JoinHostPort("localhost", port)} {
		if c, err := testPolicy().Dialer().DialContext(ctx, "tcp", addr); err == nil {
			c.Close()
			t.Errorf("dial %s: not refused", addr)
		} else if !errors.Is(err, ErrRefused) {
			t.Errorf("dial %s: %v, want ErrRefused", addr, err)
		}
	}
	c, err := testPolicy("127.0.0.0/8").Dialer().DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("allowed dial: %v", err)
	}
	c.Close()
}
