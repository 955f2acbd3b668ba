package e2e

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// slowWatchGrowthMB bounds how much the server's heap (anonymous memory) may grow while
// ten clients do not read their watches through 300 updates of a 200 KB configmap: the
// server grew by about 1.9 GB before watch streams were bounded (docs/operations.md,
// Watch streams and slow clients). The updates alone grow it by about 160 MB (etcd's
// raft log and the garbage of 200 KB bodies); the ten queues may add 80 MiB.
const slowWatchGrowthMB = 300

// TestSlowWatchersHoldNoMemory: ten watch clients that stop reading while a 200 KB
// configmap is updated 300 times cost the server a bounded amount of memory, each gets a
// final ERROR line naming where to resume, and a reading client sees every update.
func TestSlowWatchersHoldNoMemory(t *testing.T) {
	bin := buildPlain(t)
	s := startBerthBinary(t, bin, t.TempDir(), "server", "--join-token", joinToken)
	blob := make([]byte, 150<<10)
	rand.Read(blob)
	content := base64.StdEncoding.EncodeToString(blob) // 200 KB
	put := func(n int) {
		t.Helper()
		doc := fmt.Sprintf(`{"apiVersion":"v4","kind":"configmap","metadata":{"name":"big","namespace":"soak","labels":{"n":"%d"}},"datas":{"k":{"type":"file","content":%q}}}`, n, content)
		resp, err := s.http.Post(s.url+"/v1/apply", "application/json", strings.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("apply %d: %s", n, resp.Status)
		}
	}
	put(0)
	before := anonMB(s.cmd.Process.Pid)

	var slow []net.Conn
	for range 10 {
		c := slowWatcher(t, s)
		defer c.Close()
		slow = append(slow, c)
	}
	var watched atomic.Int64
	go readWatch(t.Context(), s, &watched)

	// 150 updates (30 MB) leave each slow client far behind; then they read at last, and
	// each finds the ERROR line at the end of its stream, while the rest go by.
	most := before
	ends := make(chan string, len(slow))
	for n := 1; n <= 300; n++ {
		put(n)
		if n%20 == 0 {
			most = max(most, anonMB(s.cmd.Process.Pid))
		}
		if n == 150 {
			// Once the reading client has these changes, so have the slow clients' streams
			// (etcd's watch can lag the writes on a busy machine).
			waitUntil(t, 20*time.Second, "the reading client saw 150 updates", func() bool { return watched.Load() >= 151 })
			for _, c := range slow {
				go func() { ends <- lastLine(c) }()
			}
		}
	}
	most = max(most, anonMB(s.cmd.Process.Pid))
	t.Logf("server heap (RssAnon) %.0f MB before, at most %.0f MB during 300 updates of 200 KB with 10 clients not reading; RSS %.0f MB at the end",
		before, most, rssMB(s.cmd.Process.Pid))
	if most-before > slowWatchGrowthMB {
		t.Errorf("the server's heap grew by %.0f MB, more than %d MB", most-before, slowWatchGrowthMB)
	}
	for i := range slow {
		last := <-ends
		if !strings.Contains(last, `"type":"ERROR"`) || !strings.Contains(last, `"code":410`) || !strings.Contains(last, `"resourceVersion"`) {
			t.Errorf("slow client %d: the stream ended with %.300q, want the ERROR line", i, last)
		}
	}
	waitUntil(t, 20*time.Second, "the reading client saw every update", func() bool { return watched.Load() >= 301 })
}

// lastLine reads a watch response from c to its end (30 s at most) and returns its last
// line, or the error that broke it.
func lastLine(c net.Conn) string {
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	last := ""
	for sc.Scan() {
		last = sc.Text()
	}
	if err := sc.Err(); err != nil {
		return fmt.Sprintf("%s (then %v)", last, err)
	}
	return last
}
