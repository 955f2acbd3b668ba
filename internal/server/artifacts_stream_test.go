package server

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// pattern is a reader of n bytes that holds none of them.
type pattern struct{ left int64 }

func (p *pattern) Read(b []byte) (int, error) {
	if p.left <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(b)), p.left)
	for i := range b[:n] {
		b[i] = byte(p.left - int64(i))
	}
	p.left -= n
	return int(n), nil
}

// heapPeak samples the heap in use (every few milliseconds) until stop is called, which returns its growth over
// the heap at the start.
func heapPeak() (stop func() uint64) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return max(peak.Load(), base) - base
	}
}

// A 50 MB artifact goes through the server, up and down, without the server's heap
// growing by anything near its size.
func TestArtifactStreams50MB(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 100 MB")
	}
	const size, bound = 50 << 20, 16 << 20
	// Collect often, so the peak is what is held, not garbage waiting for a collection
	// (the test's etcd lives in the same heap).
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	url := newTestServer(t, Config{ArtifactDir: t.TempDir()})
	stepTG(t, "ns", "s1", "n1", nil)
	stepTG(t, "ns", "s2", "n1", func(s *v4.StepIO) { s.Inputs[0].Key = "ns/wf/u1/n-1/out" })

	stop := heapPeak()
	req, err := http.NewRequest(http.MethodPut, agentArtifactURL(url, "ns", "s1", "artifact", "out"), &pattern{left: size})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpClientAs(t, "n1").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	up := stop()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("put: %s", resp.Status)
	}

	stop = heapPeak()
	resp, err = httpClientAs(t, "n1").Get(agentArtifactURL(url, "ns", "s2", "input", "in"))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	resp.Body.Close()
	down := stop()
	if err != nil || n != size {
		t.Fatalf("read back %d bytes, err %v", n, err)
	}
	want := sha256.New()
	io.Copy(want, &pattern{left: size})
	if hex.EncodeToString(h.Sum(nil)) != hex.EncodeToString(want.Sum(nil)) {
		t.Fatal("the bytes read back differ")
	}
	t.Logf("heap growth: %d KiB up, %d KiB down, for %d MiB", up>>10, down>>10, size>>20)
	if up > bound || down > bound {
		t.Fatalf("heap grew by %d (up) and %d (down) bytes for a %d-byte artifact, want under %d", up, down, size, bound)
	}
}
