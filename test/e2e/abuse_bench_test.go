package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The API under abuse (docs/benchmarks.md, "The API under abuse"): a server built
// without the race detector holds a namespace of about 75 MB of configmaps. While 500
// connections without credentials trickle headers and bodies at it from another source
// address (reconnecting when cut), and 16 clients list the whole namespace at once,
// again and again, an administrator reads one object every 50 ms. The benchmark
// reports the administrator's p99 latency and how much the server's resident memory
// grew. Every loop is bounded in count and time; all traffic stays on loopback.
const (
	abuseSlowConns   = 500
	abuseLists       = 16
	abuseListRounds  = 3
	abuseObjects     = 750
	abuseObjectBytes = 100 << 10
	abuseDuration    = 60 * time.Second
)

func BenchmarkAPIUnderAbuse(b *testing.B) {
	requireRoot(b)
	bin := buildPlain(b)
	s := startBerthBinary(b, bin, b.TempDir(), "server")
	fillNamespace(b, s, "big", abuseObjects, abuseObjectBytes)
	client := s.http
	pid := s.cmd.Process.Pid
	base := rssOf(b, pid)
	b.ResetTimer()
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), abuseDuration)
		var wg sync.WaitGroup
		for i := range abuseSlowConns {
			wg.Go(func() { slowClient(ctx, s.url, i%2 == 0) })
		}
		listsDone := make(chan struct{})
		var lw sync.WaitGroup
		for range abuseLists {
			lw.Go(func() {
				for range abuseListRounds {
					if ctx.Err() != nil {
						return
					}
					resp, err := client.Get(s.url + "/v1/namespaces/big/configmaps")
					if err != nil {
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
		go func() { lw.Wait(); close(listsDone) }()
		var lat []time.Duration
		peak := base
		tick := time.NewTicker(50 * time.Millisecond)
	measure:
		for {
			select {
			case <-listsDone:
				break measure
			case <-ctx.Done():
				break measure
			case <-tick.C:
			}
			start := time.Now()
			resp, err := client.Get(s.url + "/v1/namespaces/big/configmaps/c0001")
			if err != nil {
				b.Fatalf("the administrator's read failed: %v", err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("the administrator's read: %s", resp.Status)
			}
			lat = append(lat, time.Since(start))
			peak = max(peak, rssOf(b, pid))
		}
		tick.Stop()
		cancel()
		wg.Wait()
		lw.Wait()
		slices.Sort(lat)
		p99 := lat[min(len(lat)-1, len(lat)*99/100)]
		b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(peak-base)/(1<<20), "rss-growth-MB")
		b.Logf("%d reads: p50 %s, p99 %s, max %s; RSS %d MB before, %d MB at most (+%d MB)",
			len(lat), lat[len(lat)/2], p99, lat[len(lat)-1], base>>20, peak>>20, (peak-base)>>20)
	}
}

// fillNamespace creates n configmaps of size bytes each in ns.
func fillNamespace(b *testing.B, s *devServer, ns string, n, size int) {
	b.Helper()
	raw := make([]byte, size*3/4)
	for i := range n {
		rand.Read(raw)
		body := fmt.Sprintf(`{"apiVersion":"v4","kind":"configmap","metadata":{"name":"c%04d","namespace":%q},"datas":{"k":{"type":"file","content":%q}}}`,
			i, ns, base64.StdEncoding.EncodeToString(raw))
		resp, err := s.http.Post(s.url+"/v1/namespaces/"+ns+"/configmaps", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("create configmap %d: %s", i, resp.Status)
		}
	}
}

// slowClient plays a client without credentials from 127.0.0.2 until ctx ends: it
// sends a request's headers (slowly when slowHeaders) and then a body a byte at a time,
// and connects again whenever the server cuts it.
func slowClient(ctx context.Context, url string, slowHeaders bool) {
	host := strings.TrimPrefix(url, "https://")
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 5 * time.Second}
	for ctx.Err() == nil {
		raw, err := d.DialContext(ctx, "tcp", host)
		if err != nil {
			sleepCtx(ctx, time.Second)
			continue
		}
		c := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}) // an attacker checks nothing
		stop := context.AfterFunc(ctx, func() { c.Close() })
		req := "POST /v1/apply HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n"
		step := len(req)
		if slowHeaders {
			step = 1
		}
		go func() { bufio.NewReader(c).ReadString(0) }() // drain what the server answers
		for i := 0; i < len(req) && ctx.Err() == nil; i += step {
			if _, err := c.Write([]byte(req[i:min(i+step, len(req))])); err != nil {
				break
			}
			if slowHeaders {
				sleepCtx(ctx, 500*time.Millisecond)
			}
		}
		for ctx.Err() == nil {
			if _, err := c.Write([]byte(" ")); err != nil {
				break
			}
			sleepCtx(ctx, time.Second)
		}
		stop()
		c.Close()
		sleepCtx(ctx, time.Second) // a slow client, not a flood of handshakes
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// rssOf is a process's resident memory in bytes.
func rssOf(b *testing.B, pid int) int64 {
	b.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
