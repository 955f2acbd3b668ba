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
	l := newLimitListener(ln, 1, quietLogger())
	defer l.Close()
	accepted := make(chan net.Conn, 3)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
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
