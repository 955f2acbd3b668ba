// Package loopback is for tests that serve and ask on 127.0.0.1 (the load-balancer group's
// unit and e2e tests, the docker driver's, the health checks'): a free port to bind, a
// listener that serves each connection with a handler, a GET by virtual host and a
// continuous load of them. Only tests import it.
package loopback

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
)

// FreePort is a loopback TCP port nothing listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// GetHost asks http://addr/ for host's page (host is the request's Host): the body of a
// 200 answer, or an error with the status and body of any other.
func GetHost(ctx context.Context, client *http.Client, addr, host string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		return "", err
	}
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	return string(body), err
}

// Serve runs handle, each in a goroutine of its own, on the connections to a new
// loopback listener until the test ends, and returns the listener's address.
func Serve(t testing.TB, handle func(net.Conn)) *net.TCPAddr {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return ln.Addr().(*net.TCPAddr)
}

// ClosingPort is a loopback TCP port that accepts connections and closes them at once,
// for a TCP check that needs an open port, until the test ends.
func ClosingPort(t testing.TB) int {
	t.Helper()
	return Serve(t, func(c net.Conn) { c.Close() }).Port
}
