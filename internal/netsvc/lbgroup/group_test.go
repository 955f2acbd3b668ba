package lbgroup

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/netsvc"
	"github.com/berthhq/berth/internal/testutil/loopback"
	"github.com/berthhq/berth/internal/testutil/requires"
)

// httpBackend serves its name on loopback and returns its address and its end.
func httpBackend(t *testing.T, name string) (string, func()) {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, name) }))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://"), s.Close
}

// echoBackend echoes one line per connection, prefixed with its name.
func echoBackend(t *testing.T, name string) string {
	t.Helper()
	return loopback.Serve(t, func(c net.Conn) {
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadString('\n')
		io.WriteString(c, name+":"+line)
	}).String()
}

// stopHAProxy ends the group's HAProxy processes when the test ends.
func stopHAProxy(t *testing.T, dir string) {
	t.Cleanup(func() {
		for _, pid := range (haproxy{dir: dir}).running() {
			syscall.Kill(pid, syscall.SIGTERM)
		}
	})
}

type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) add(reason, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, reason+": "+msg)
}

func (w *warnings) get() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.list)
}

// get asks the group's HTTP port for host's page.
func get(client *http.Client, port int, host string) (string, error) {
	return loopback.GetHost(context.Background(), client, fmt.Sprintf("127.0.0.1:%d", port), host)
}

// seen asks at least n times, and on until it has seen want answers (at most 100
// times: other clients share the round robin), and returns the distinct answers.
func seen(t *testing.T, port, n, want int) []string {
	t.Helper()
	var out []string
	for i := 0; i < 100 && (i < n || len(out) < want); i++ {
		body, err := get(http.DefaultClient, port, "web.example.com")
		if err != nil {
			t.Fatalf("GET web.example.com: %v", err)
		}
		if !slices.Contains(out, body) {
			out = append(out, body)
		}
	}
	slices.Sort(out)
	return out
}

// webEndpoints are web's endpoints at addrs ("IP:port").
func webEndpoints(addrs ...string) *v4.Endpoints {
	var in []string
	for _, a := range addrs {
		in = append(in, "web@"+a)
	}
	return eps("web", "http", in...)
}

func TestGroupServesThroughHAProxy(t *testing.T) {
	requires.HAProxy(t)
	ctx := context.Background()
	b1, end1 := httpBackend(t, "b1")
	b2, _ := httpBackend(t, "b2")
	b3, _ := httpBackend(t, "b3")
	b4, _ := httpBackend(t, "b4")
	echo := echoBackend(t, "echo")
	httpPort, tcpPort := loopback.FreePort(t), loopback.FreePort(t)

	cat := netsvc.NewCatalog("cluster.local")
	cat.Put(svc("web", nil, v4.ServicePort{Name: "http", Protocol: "http", ServicePort: 80, DomainName: "web.example.com"}))
	cat.Put(webEndpoints(b1, b2))
	cat.Put(svc("echo", nil, v4.ServicePort{Name: "line", Protocol: "tcp", ServicePort: tcpPort}))
	cat.Put(eps("echo", "line", "echo@"+echo))

	dir := t.TempDir()
	stopHAProxy(t, dir)
	var warned warnings
	g, err := New(cat, Config{Group: "g1", Dir: dir, BindAddr: "127.0.0.1", HTTPPort: httpPort, Warn: warned.add})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	pids := g.proc.running()
	if len(pids) != 1 {
		t.Fatalf("haproxy pids %v", pids)
	}
	if got := seen(t, httpPort, 10, 2); !slices.Equal(got, []string{"b1", "b2"}) {
		t.Errorf("web.example.com answered by %v", got)
	}
	if _, err := get(http.DefaultClient, httpPort, "other.example.com"); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("an unknown host: %v, want 503", err)
	}
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", tcpPort))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(c, "hello")
	if line, _ := bufio.NewReader(c).ReadString('\n'); line != "echo:hello\n" {
		t.Errorf("tcp port answered %q", line)
	}
	c.Close()

	// Continuous load while instances come and go and the group reloads: no request
	// fails. Bounded in count and time.
	client := &http.Client{Timeout: 5 * time.Second}
	load := loopback.StartLoad(4, 30*time.Second, 50_000, func() error {
		_, err := get(client, httpPort, "web.example.com")
		return err
	})
	step := func(what string, want []string, reload bool) {
		t.Helper()
		if err := g.Sync(ctx); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if now := g.proc.running(); reload == slices.Equal(now, pids) {
			t.Errorf("%s: haproxy %v before, %v after (reload %v)", what, pids, now, reload)
		}
		pids = g.proc.running()
		if got := seen(t, httpPort, 12, len(want)); !slices.Equal(got, want) {
			t.Errorf("%s: answered by %v, want %v", what, got, want)
		}
		time.Sleep(300 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	cat.Put(webEndpoints(b1, b2, b3))
	step("b3 added", []string{"b1", "b2", "b3"}, false)
	cat.Put(webEndpoints(b2, b3))
	step("b1 removed", []string{"b2", "b3"}, false)
	end1() // as an instance that left its endpoints ends: HAProxy's idle connections to it break
	cat.Put(svc("api", nil, v4.ServicePort{Name: "http", Protocol: "http", ServicePort: 80, DomainName: "api.example.com"}))
	step("a service added", []string{"b2", "b3"}, true)
	cat.Put(webEndpoints(b3, b4))
	step("b2 replaced by b4", []string{"b3", "b4"}, false)
	sent, failed, firstErr := load.Stop()
	if failed > 0 || sent < 100 {
		t.Errorf("%d of %d requests failed during the changes (first: %v)", failed, sent, firstErr)
	}
	t.Logf("%d requests during the changes, %d failed", sent, failed)
	if w := warned.get(); len(w) > 0 {
		t.Errorf("warnings: %q", w)
	}
	if cfg, _ := os.ReadFile(filepath.Join(dir, configFile)); !strings.Contains(string(cfg), b4) || strings.Contains(string(cfg), b2) {
		t.Errorf("the configuration file does not say what runs:\n%s", cfg)
	}
}

// TestRefusedConfigurationKeepsTheRunningOne: a configuration HAProxy refuses (here
// an HAProxy that does not know a keyword, as an older version would not) and one it
// cannot start (here a start that fails) leave the running HAProxy and its
// configuration in place, and are reported once each. (A port another program holds
// leaves only its frontend out: group_ports_test.go.)
func TestRefusedConfigurationKeepsTheRunningOne(t *testing.T) {
	real := requires.HAProxy(t)
	ctx := context.Background()
	dir, tools := t.TempDir(), t.TempDir()
	stopHAProxy(t, dir)
	// The wrapper checks with a file of an unknown keyword added while "old" exists.
	bad := filepath.Join(tools, "bad.cfg")
	if err := os.WriteFile(bad, []byte("frontend extra\n    no-such-keyword on\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(tools, "old")
	wrapper := filepath.Join(tools, "haproxy")
	// It fails to start (-D) while "nostart" exists.
	nostart := filepath.Join(tools, "nostart")
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = -c ] && [ -e %s ]; then exec %s \"$@\" -f %s; fi\n"+
		"if [ \"$1\" = -D ] && [ -e %s ]; then echo '[ALERT] no start today' >&2; exit 1; fi\nexec %s \"$@\"\n", old, real, bad, nostart, real)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b1, _ := httpBackend(t, "b1")
	httpPort := loopback.FreePort(t)
	cat := netsvc.NewCatalog("cluster.local")
	cat.Put(svc("web", nil, v4.ServicePort{Name: "http", Protocol: "http", ServicePort: 80, DomainName: "web.example.com"}))
	cat.Put(webEndpoints(b1))
	var warned warnings
	g, err := New(cat, Config{Group: "g1", Dir: dir, HAProxy: wrapper, BindAddr: "127.0.0.1", HTTPPort: httpPort, Warn: warned.add})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	pids, cfg := g.proc.running(), g.Config()
	if len(pids) != 1 {
		t.Fatalf("haproxy pids %v", pids)
	}
	unchanged := func(what string) {
		t.Helper()
		if now := g.proc.running(); !slices.Equal(now, pids) || g.Config() != cfg {
			t.Errorf("%s: haproxy %v -> %v, configuration changed %v", what, pids, now, g.Config() != cfg)
		}
		if got := seen(t, httpPort, 4, 1); !slices.Equal(got, []string{"b1"}) {
			t.Errorf("%s: answered by %v", what, got)
		}
	}

	if err := os.WriteFile(old, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cat.Put(svc("api", nil, v4.ServicePort{Name: "http", Protocol: "http", ServicePort: 80, DomainName: "api.example.com"}))
	for range 2 { // the second sync does not try again
		if err := g.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	unchanged("refused")
	if w := warned.get(); len(w) != 1 || !strings.HasPrefix(w[0], "LoadBalancerConfigRefused") || !strings.Contains(w[0], "no-such-keyword") {
		t.Fatalf("warnings %q", w)
	}
	os.Remove(old)

	// A start that fails: the old HAProxy serves on.
	if err := os.WriteFile(nostart, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	db := loopback.FreePort(t)
	cat.Put(svc("db", nil, v4.ServicePort{Name: "pg", Protocol: "tcp", ServicePort: db}))
	cat.Put(eps("db", "pg", "db@"+b1))
	if err := g.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	unchanged("start failed")
	if w := warned.get(); len(w) != 2 || !strings.HasPrefix(w[1], "LoadBalancerStartFailed") || !strings.Contains(w[1], "no start today") {
		t.Fatalf("warnings %q", w)
	}
	// Once HAProxy starts again, the next change applies.
	os.Remove(nostart)
	cat.Put(webEndpoints(b1))
	cat.Put(svc("db", map[string]string{v4.MaxConnLabel: "100"}, v4.ServicePort{Name: "pg", Protocol: "tcp", ServicePort: db}))
	if err := g.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if now := g.proc.running(); len(now) != 1 || slices.Equal(now, pids) || !strings.Contains(g.Config(), fmt.Sprintf("tcp-%d", db)) {
		t.Errorf("after HAProxy could start again: haproxy %v (was %v)", now, pids)
	}
}
