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
	"slices"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
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
	_, p := vipProxy(ns, "10.254.78.1", direct)
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

// BenchmarkCatalogToVIP measures, on a node whose table forwards 1,000 services of 10
// instances, how soon a change of a service's instances that reaches the node's catalog
// is answered through the VIP: the proxy running as in the agent (its update loop), and
// a client in the node's network namespace opening a new connection every millisecond
// until the new instance answers. Each change moves the service's one instance to the
// other of two backends. It reports the p50 and p99 of those times.
func BenchmarkCatalogToVIP(b *testing.B) {
	requireNetAdmin(b)
	ns, hostIP, _ := testNetns(b, 79)
	cat := bigCatalog(1000, 10)
	probe := &v4.Service{Metadata: v4.ObjectMeta{Name: "probe", Namespace: "bench"},
		Spec: v4.ServiceSpec{Selector: map[string]string{"app": "probe"}, Ports: []v4.ServicePort{{Name: "http", Protocol: "http", ServicePort: 80}}}}
	cat.Put(probe)
	const vip = "10.254.250.1"
	at := map[string]*v4.Endpoints{}
	for _, name := range []string{"a", "b"} {
		ep := vipEndpoints(vip, fmt.Sprintf("%s:%d", hostIP, backend(b, hostIP, name)))
		ep.Metadata = probe.Metadata
		at[name] = ep
	}
	cat.Put(at["a"])
	var svcs, eps []v4.Object // listed, as the agent's first list does: the proxy starts
	for _, sv := range cat.Services() {
		svcs = append(svcs, sv.Service)
		if sv.Endpoints != nil {
			eps = append(eps, sv.Endpoints)
		}
	}
	cat.Replace(v4.KindService, svcs)
	cat.Replace(v4.KindEndpoint, eps)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	p := NewProxy(cat, ProxyConfig{NetNS: "/run/netns/" + ns})
	go func() { p.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })

	// answered waits until the VIP answers want, polling every millisecond for 5 s.
	answered := func(want string) error {
		return inNetns(ns, func() error {
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				if body, err := fetch(vip + ":80"); err == nil && body == want {
					return nil
				}
				time.Sleep(time.Millisecond)
			}
			return fmt.Errorf("the VIP did not answer %q within 5 s", want)
		})
	}
	if err := answered("a"); err != nil {
		b.Fatal(err)
	}
	var times []time.Duration
	next := "b"
	for b.Loop() {
		t0 := time.Now()
		cat.Put(at[next])
		if err := answered(next); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
		next = map[string]string{"a": "b", "b": "a"}[next]
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[(len(times)-1)*99/100].Microseconds())/1000, "p99-ms")
}
