package netsvc

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// inNetns runs fn on a thread that joined network namespace ns (the thread is left
// locked and ends with its goroutine).
func inNetns(ns string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		f, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			done <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("setns: %w", err)
			return
		}
		done <- fn()
	}()
	return <-done
}

// fetch opens a connection to addr, sends GET / and returns the answer's body: a new
// connection each time, as the proxy's translation is decided per connection.
func fetch(addr string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	fmt.Fprintf(conn, "GET / HTTP/1.0\r\nHost: %s\r\n\r\n", addr)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// BenchmarkVIPPath measures what the service proxy adds to a connection: a client in a
// network namespace opens a connection, sends one request and reads the answer, directly
// to an instance and through the service's VIP (nftables DNAT and masquerade), over
// the same veth pair.
func BenchmarkVIPPath(b *testing.B) {
	requireNetAdmin(b)
	ns, hostIP, _ := testNetns(b, 78)
	port := backend(b, hostIP, "a")
	direct := fmt.Sprintf("%s:%d", hostIP, port)
	cat := NewCatalog("cluster.local")
	cat.Put(webService())
	cat.Put(vipEndpoints("10.254.78.1", direct))
	p := NewProxy(cat, ProxyConfig{NetNS: "/run/netns/" + ns})
	if err := p.Sync(context.Background()); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, addr string }{{"direct", direct}, {"vip", "10.254.78.1:80"}} {
		b.Run(c.name, func(b *testing.B) {
			err := inNetns(ns, func() error {
				b.ResetTimer()
				for range b.N {
					if _, err := fetch(c.addr); err != nil {
						return err
					}
				}
				b.StopTimer()
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}
