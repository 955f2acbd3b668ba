package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/pki"
)

// freezingListener's connections stop reading once frozen, as those of a server whose
// machine froze (no FIN, no answer): a read waits until the connection is closed.
type freezingListener struct {
	net.Listener
	accepted atomic.Int32
	mu       sync.Mutex
	frozen   chan struct{} // closed to freeze the connections accepted so far
}

func (l *freezingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.accepted.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	return &freezingConn{Conn: c, frozen: l.frozen, closed: make(chan struct{})}, nil
}

// freeze freezes the connections accepted so far; later ones work.
func (l *freezingListener) freeze() {
	l.mu.Lock()
	defer l.mu.Unlock()
	close(l.frozen)
	l.frozen = make(chan struct{})
}

type freezingConn struct {
	net.Conn
	frozen    chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

// Read drops what it read once frozen (a read may be waiting as the freeze comes).
func (c *freezingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	select {
	case <-c.frozen:
		<-c.closed
		return 0, net.ErrClosed
	default:
		return n, err
	}
}

func (c *freezingConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// An agent's HTTP/2 connection to a server that froze is closed by its pings: the call
// waiting on it fails, and the next one dials a new connection instead of waiting on the
// dead one (over HTTP/1.1, giving up a call closed its connection).
func TestMultiplexedClientDropsAFrozenConnection(t *testing.T) {
	defer func(a, w time.Duration) { h2PingAfter, h2PingWait = a, w }(h2PingAfter, h2PingWait)
	h2PingAfter, h2PingWait = 100*time.Millisecond, 100*time.Millisecond
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(r.Proto))
	}))
	ts.EnableHTTP2 = true
	fl := &freezingListener{Listener: ts.Listener, frozen: make(chan struct{})}
	ts.Listener = fl
	ts.StartTLS()
	defer ts.Close()
	roots := x509.NewCertPool()
	roots.AddCert(ts.Certificate())
	hc := MultiplexedHTTPClient(pki.Hardened(&tls.Config{RootCAs: roots}))
	defer hc.CloseIdleConnections()
	get := func() (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // the test's bound only
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
		resp, err := hc.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		return resp.Proto, nil
	}
	for range 3 {
		if proto, err := get(); err != nil || proto != "HTTP/2.0" {
			t.Fatalf("a call: %s %v", proto, err)
		}
	}
	if n := fl.accepted.Load(); n != 1 {
		t.Fatalf("%d connections for 3 calls, want 1", n)
	}
	fl.freeze()
	if _, err := get(); err == nil {
		t.Fatal("a call to a frozen server answered")
	}
	if proto, err := get(); err != nil || proto != "HTTP/2.0" {
		t.Fatalf("the call after the frozen connection was dropped: %s %v", proto, err)
	}
	if n := fl.accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}
