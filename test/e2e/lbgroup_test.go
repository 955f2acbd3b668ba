package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/testutil/loopback"
	"github.com/berthhq/berth/internal/testutil/requires"
)

// getVia asks addr for host's page.
func getVia(client *http.Client, addr, host string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	body, err := loopback.GetHost(ctx, client, addr, host)
	return strings.TrimSpace(body), err
}

// answers asks n times and counts the distinct answers (errors count as "error").
func answers(addr, host string, n int) map[string]int {
	got := map[string]int{}
	for range n {
		body, err := getVia(http.DefaultClient, addr, host)
		if err != nil {
			body = "error"
		}
		got[body]++
	}
	return got
}

// A node of load-balancer group g1 serves an HTTP service by its virtual host and a TCP
// service on its port, from real processes, and goes on answering every request of a
// continuous load while the application scales up and down.
func TestLoadBalancerGroup(t *testing.T) {
	requireRoot(t)
	requires.HAProxy(t)
	s := startServer(t, t.TempDir())
	httpPort, tcpPort := loopback.FreePort(t), loopback.FreePort(t)
	a := startAgent(t, s, "lb", "29500-29599", "--lb-group", "g1", "--lb-bind", "127.0.0.1", "--lb-http-port", strconv.Itoa(httpPort))
	// HAProxy outlives its agent, by design: the test stops it.
	t.Cleanup(func() {
		b, _ := os.ReadFile(filepath.Join(a.dataDir, "lbgroup", "haproxy.pid"))
		for f := range strings.FieldsSeq(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				syscall.Kill(pid, syscall.SIGTERM)
			}
		}
	})
	const ns = "lbe2e"
	s.cleanupProcesses(ns)
	// Each instance serves its own pid (the shell's, which httpd takes over with exec).
	s.applySpec(t, httpdProcess{name: "lbweb", ns: ns, instances: 2, prepare: "echo $$ > www/index.html", cpu: "0.4"}.json())
	s.applySpec(t, fmtSpec(`{"apiVersion":"v4","kind":"service","metadata":{"name":"lbweb","namespace":%q,"labels":{"BCSGROUP":"g1"}},
		"spec":{"selector":{"app":"lbweb"},"ports":[{"name":"http","protocol":"http","servicePort":80,"domainName":"web.example.com"}]}}
{"apiVersion":"v4","kind":"service","metadata":{"name":"lbraw","namespace":%q,"labels":{"BCSGROUP":"g1","BCSBALANCE":"leastconn"}},
		"spec":{"selector":{"app":"lbweb"},"ports":[{"name":"http","protocol":"tcp","servicePort":%d}]}}`, ns, ns, tcpPort))
	// A second service claiming the TCP port in the group is refused.
	r := s.berth(fmtSpec(`{"apiVersion":"v4","kind":"service","metadata":{"name":"clash","namespace":%q,"labels":{"BCSGROUP":"g1"}},
		"spec":{"selector":{"app":"lbweb"},"ports":[{"name":"http","protocol":"tcp","servicePort":%d}]}}`, ns, tcpPort), "apply", "-f", "-")
	if r.code == 0 || !strings.Contains(r.stderr+r.stdout, "is service "+ns+"/lbraw's") {
		t.Errorf("a clashing port was not refused: %d %s%s", r.code, r.stdout, r.stderr)
	}
	s.running(t, ns, "lbweb", 2)
	web := "127.0.0.1:" + strconv.Itoa(httpPort)
	waitUntil(t, 30*time.Second, "the group to serve web.example.com from both instances", func() bool {
		got := answers(web, "web.example.com", 8)
		return len(got) == 2 && got["error"] == 0
	})
	waitUntil(t, 30*time.Second, "the group to serve the TCP port", func() bool {
		got := answers("127.0.0.1:"+strconv.Itoa(tcpPort), "any", 4)
		return len(got) >= 1 && got["error"] == 0
	})
	if got := answers(web, "other.example.com", 2); got["error"] != 2 {
		t.Errorf("an unknown host was answered: %v", got)
	}

	// Continuous load (bounded) while instances come and go: no request fails.
	client := &http.Client{}
	load := loopback.StartLoad(2, 90*time.Second, 200_000, func() error {
		_, err := getVia(client, web, "web.example.com")
		return err
	})
	time.Sleep(time.Second)
	s.mustBerth("scale", "process", "lbweb", "3", "-n", ns)
	waitUntil(t, 60*time.Second, "the third instance behind the group", func() bool { return len(answers(web, "web.example.com", 9)) == 3 })
	s.mustBerth("scale", "process", "lbweb", "1", "-n", ns)
	waitUntil(t, 60*time.Second, "one instance left behind the group", func() bool { return len(answers(web, "web.example.com", 6)) == 1 })
	time.Sleep(time.Second)
	sent, failed, firstErr := load.Stop()
	t.Logf("%d requests while the application scaled 2 -> 3 -> 1, %d failed", sent, failed)
	if failed > 0 || sent < 200 {
		t.Errorf("%d of %d requests failed (first: %v)", failed, sent, firstErr)
	}
}
