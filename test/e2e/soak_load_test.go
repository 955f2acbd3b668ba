package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The load of the soak test (soak_test.go): applies of large configmaps, watch clients
// that never read, a watch client that reads everything, and the sampling of the
// server's resident memory, etcd's database size and the event count.

// buildPlain builds berth without the race detector, whose memory overhead would hide
// what the soak measures.
func buildPlain(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "berth")
	build := exec.Command("go", "build", "-o", bin, "github.com/berthhq/berth/cmd/berth")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("build berth: %v", err)
	}
	return bin
}

// latencies collects apply latencies; take returns and clears those of one interval.
type latencies struct {
	mu  sync.Mutex
	cur []time.Duration
	all []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.cur = append(l.cur, d)
	l.all = append(l.all, d)
	l.mu.Unlock()
}

func (l *latencies) take() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.cur
	l.cur = nil
	return out
}

// percentile of sorted-in-place ds (0 when empty).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(float64(len(ds))*p))]
}

// floodApplies applies configmap cm-<worker>-<n%keys> of size bytes through POST
// /v1/apply until ctx ends, pacing itself to one apply per pace. A refused or failed apply
// is a failure of the soak: applying is a normal operation.
func floodApplies(ctx context.Context, s *devServer, worker, size int, pace time.Duration, lat *latencies, failed *atomic.Int64, lastErr *atomic.Value) {
	blob := make([]byte, size*3/4)
	rand.Read(blob)
	content := base64.StdEncoding.EncodeToString(blob)
	client := &http.Client{Transport: s.http.Transport, Timeout: 30 * time.Second}
	for n := 0; ctx.Err() == nil; n++ {
		doc := fmt.Sprintf(`{"apiVersion":"v4","kind":"configmap","metadata":{"name":"cm-%d-%d","namespace":"soak","labels":{"n":"%d"}},"datas":{"k":{"type":"file","content":%q}}}`,
			worker, n%5, n, content)
		start := time.Now()
		resp, err := client.Post(s.url+"/v1/apply", "application/json", strings.NewReader(doc))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("apply answered %s", resp.Status)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failed.Add(1)
			lastErr.Store(err.Error())
		} else {
			lat.add(time.Since(start))
		}
		sleep(ctx, pace)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// slowWatcher opens a watch of the soak namespace's configmaps and never reads it, with
// a fixed receive buffer (the kernel cannot grow it to hold the flood), as a stuck
// client would. It speaks TLS over that TCP connection, trusting the server's CA.
func slowWatcher(t *testing.T, s *devServer) net.Conn {
	t.Helper()
	u, err := url.Parse(s.url)
	if err != nil {
		t.Fatal(err)
	}
	// The receive buffer is set before connecting, so the window scale is negotiated for
	// it and the kernel cannot grow it to hold the flood.
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10) })
		return errors.Join(err, serr)
	}}
	raw, err := d.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	c := tls.Client(raw, &tls.Config{RootCAs: s.roots, ServerName: u.Hostname(), MinVersion: tls.VersionTLS12})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.HandshakeContext(ctx); err != nil {
		raw.Close()
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET /v1/namespaces/soak/configmaps?watch=true HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", u.Host, s.token)
	return c
}

// readWatch reads a configmap watch of the soak namespace to the end, counting lines, as
// a healthy client does.
func readWatch(ctx context.Context, s *devServer, lines *atomic.Int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/v1/namespaces/soak/configmaps?watch=true", nil)
	if err != nil {
		return err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte(`"type":"ERROR"`)) {
			return fmt.Errorf("a reading watcher got an error event: %.300s", sc.Text())
		}
		lines.Add(1)
	}
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("a reading watcher's stream ended: %v", sc.Err())
}

// rssMB is the resident memory of process pid in MB: its heap and stacks (anonMB) and
// the pages of files it maps, etcd's database among them.
func rssMB(pid int) float64 { return statusMB(pid, "VmRSS:") }

// anonMB is the anonymous resident memory of process pid in MB: what the Go heap holds.
func anonMB(pid int) float64 { return statusMB(pid, "RssAnon:") }

// statusMB reads a size field of /proc/pid/status in MB (-1 when absent).
func statusMB(pid int, field string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return -1
}

// dbMB is the size of the embedded etcd's database file in MB.
func dbMB(dataDir string) float64 {
	st, err := os.Stat(filepath.Join(dataDir, "etcd", "member", "snap", "db"))
	if err != nil {
		return -1
	}
	return float64(st.Size()) / (1 << 20)
}

// countEvents counts every stored event, following the pages of GET /v1/events.
func countEvents(s *devServer) (int, error) {
	n, cont := 0, ""
	for range 1000 {
		q := url.Values{"limit": {"500"}}
		if cont != "" {
			q.Set("continue", cont)
		}
		resp, err := s.http.Get(s.url + "/v1/events?" + q.Encode())
		if err != nil {
			return 0, err
		}
		var page struct {
			Items    []json.RawMessage `json:"items"`
			Continue string            `json:"continue"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("list events: %s (%v)", resp.Status, err)
		}
		n += len(page.Items)
		if page.Continue == "" {
			return n, nil
		}
		cont = page.Continue
	}
	return n, fmt.Errorf("list events: more than 1000 pages")
}
