// Package hostportstest holds host ports for the tests of what finds taken ports
// (internal/hostports, and the agent that reports them), as another program would, and
// finds free ones in a band for tests that need fixed ports (etcd members').
package hostportstest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
)

// HoldTCP listens on a free TCP port of 127.0.0.1 until the test ends, or until it calls
// release, and returns the port.
func HoldTCP(t testing.TB) (port int, release func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release = func() { ln.Close() }
	t.Cleanup(release)
	return ln.Addr().(*net.TCPAddr).Port, release
}

// HoldUDP binds a free UDP port of every address until the test ends, and returns it.
func HoldUDP(t testing.TB) int {
	t.Helper()
	pc, err := net.ListenPacket("udp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc.LocalAddr().(*net.UDPAddr).Port
}

// FreeInBand returns n loopback ports of [lo, lo+size) that are free now, tried from a
// random one on, so that test packages running at once seldom pick the same.
func FreeInBand(t testing.TB, n, lo, size int) []int {
	t.Helper()
	var ports []int
	start := rand.IntN(size)
	for i := 0; i < size && len(ports) < n; i++ {
		p := lo + (start+i)%size
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		ports = append(ports, p)
	}
	if len(ports) < n {
		t.Fatalf("only %d free ports in %d-%d", len(ports), lo, lo+size-1)
	}
	return ports
}
