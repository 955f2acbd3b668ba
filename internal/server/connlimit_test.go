package server

import (
	"net"
	"testing"
	"time"
)

// Beyond the limit a connection waits in the backlog until one closes; a slot is given
// back once however often a connection is closed.
func TestLimitListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := acceptAll(t, newLimitListener(ln, 1, 1, quietLogger()))
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first := <-accepted
	select {
	case <-accepted:
		t.Fatal("a second connection was accepted beyond the limit of 1")
	case <-time.After(200 * time.Millisecond):
	}
	first.Close()
	first.Close()
	var second net.Conn
	select {
	case second = <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting connection was not accepted after the first closed")
	}
	second.Close()
	third, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("a slot was not given back")
	}
	if defaultMaxConnections() < 64 {
		t.Fatalf("default limit %d", defaultMaxConnections())
	}
}

// One source holds at most its share: its next connection is closed at once, and another
// source still gets in.
func TestLimitListenerPerSource(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := acceptAll(t, newLimitListener(ln, 10, 2, quietLogger()))
	dialFrom := func(src string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	for range 2 {
		dialFrom("127.0.0.1")
		<-accepted
	}
	third := dialFrom("127.0.0.1")
	third.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := third.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("a third connection of one source was not closed: %v", err)
	}
	dialFrom("127.0.0.2")
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("another source was not accepted")
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// acceptAll accepts l's connections until the test ends, handing them over on the
// returned channel.
func acceptAll(t *testing.T, l *limitListener) chan net.Conn {
	t.Helper()
	t.Cleanup(func() { l.Close() })
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	return accepted
}
