// Package hostportstest holds host ports for the tests of what finds taken ports
// (internal/hostports, and the agent that reports them), as another program would.
package hostportstest

import (
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
