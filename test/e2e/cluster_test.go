package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// requireRoot skips tests that run processes in cgroups as other users, unless CI asks
// for them (BERTH_REQUIRE_CGROUPS=1), where skipping would hide a failure.
func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("BERTH_REQUIRE_CGROUPS") == "1" {
			t.Fatal("this test needs root (cgroups, users) and BERTH_REQUIRE_CGROUPS=1 is set")
		}
		t.Skip("needs root for cgroups and process users")
	}
}

// joinToken is the servers' --join-token (berth-<id>.<secret>); agents and joining servers
// are given it with the cluster CA's hash, as the server writes it to DATA-DIR/join-token.
const joinToken = "berth-e2etst.0123456789abcdef0123456789abcdef"

// startServer runs `berth server` (embedded etcd in dataDir) with a join token, so real
// `berth agent` processes can join, and the extra flags.
func startServer(t *testing.T, dataDir string, flags ...string) *devServer {
	t.Helper()
	return startBerth(t, dataDir, "server", append([]string{"--join-token", joinToken}, flags...)...)
}

// agentProc is one `berth agent` process.
type agentProc struct {
	t       *testing.T
	name    string
	netns   string // the network namespace it runs in ("": the test's)
	dataDir string
	args    []string
	cmd     *exec.Cmd
	logs    *syncBuffer
	exited  chan struct{}
}

// syncBuffer is a process's output that a test may read while the process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startAgent runs a node agent named name with its own data dir and port range, so
// several agents can share this machine as if they were different nodes; extra are more
// flags (startDockerAgent gives --docker on).
func startAgent(t *testing.T, s *devServer, name string, ports string, extra ...string) *agentProc {
	t.Helper()
	return runAgent(t, s, &agentProc{name: name}, ports, append([]string{"--server", s.url, "--listen", "127.0.0.1:0", "--ip", "127.0.0.1",
		"--dns-addr", "off"}, // agents share 127.0.0.1: a test that needs DNS gives each its own address
		extra...))
}

// runAgent starts a (its name and network namespace set) with its own data dir, port
// range and flags, and waits until its node is Ready.
func runAgent(t *testing.T, s *devServer, a *agentProc, ports string, flags []string) *agentProc {
	t.Helper()
	name := a.name
	a.t, a.dataDir = t, filepath.Join(t.TempDir(), name)
	passable(t, a.dataDir)
	a.args = []string{"agent", "--token", joinTokenOf(t, s.dataDir), "--data-dir", a.dataDir, "--node-name", name,
		"--port-range", ports, "--heartbeat", "1s", "--report", "5s"}
	a.args = append(a.args, flags...)
	a.start()
	t.Cleanup(func() {
		a.kill()
		if a.netns == "" && a.runsProxy() {
			// Its table outlives it, by design (an agent restart must not cut the VIPs): once
			// the agent is gone, nothing rewrites it.
			removeProxyTable(s.dataDir)
		}
		if t.Failed() {
			t.Logf("agent %s output:\n%s", name, a.logs.String())
		}
	})
	waitUntil(t, 30*time.Second, "node "+name+" Ready", func() bool {
		out := s.berth("", "get", "node", name, "-o", "json")
		return out.code == 0 && strings.Contains(out.stdout, `"phase": "Ready"`)
	})
	return a
}

// runsProxy reports whether the agent's flags turn its service proxy on.
func (a *agentProc) runsProxy() bool {
	for i, arg := range a.args {
		if arg == "--service-proxy=on" || arg == "--service-proxy" && i+1 < len(a.args) && a.args[i+1] == "on" {
			return true
		}
	}
	return false
}

func (a *agentProc) start() {
	a.logs, a.exited = &syncBuffer{}, make(chan struct{})
	a.cmd = exec.Command(berthBin, a.args...)
	if a.netns != "" {
		// nsenter joins the network namespace only and execs berth (the process is the
		// agent's); ip netns exec would also mount a sysfs of its own over /sys, hiding
		// the cgroup file system.
		a.cmd = exec.Command("nsenter", append([]string{"--net=/run/netns/" + a.netns, berthBin}, a.args...)...)
	}
	a.cmd.Stdout, a.cmd.Stderr = a.logs, a.logs
	if err := a.cmd.Start(); err != nil {
		a.t.Fatal(err)
	}
	go func() { a.cmd.Wait(); close(a.exited) }()
}

// kill ends the agent with SIGKILL (its workloads keep running).
func (a *agentProc) kill() {
	if a.cmd.ProcessState == nil {
		a.cmd.Process.Signal(syscall.SIGKILL)
		<-a.exited
	}
}

func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s", limit, what)
}

// taskGroups returns the task groups of a process in ns.
func (s *devServer) taskGroups(ns, owner string) []*v4.TaskGroup {
	s.t.Helper()
	r := s.berth("", "get", "taskgroups", "-n", ns, "-o", "json")
	if r.code != 0 {
		s.t.Fatalf("get taskgroups: %s", r.stderr)
	}
	var list struct{ Items []json.RawMessage }
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		s.t.Fatalf("decode task groups: %v\n%s", err, r.stdout)
	}
	var out []*v4.TaskGroup
	for _, raw := range list.Items {
		var tg v4.TaskGroup
		if err := json.Unmarshal(raw, &tg); err != nil {
			s.t.Fatal(err)
		}
		if tg.Spec.Owner.Name == owner {
			out = append(out, &tg)
		}
	}
	return out
}

// processStatus returns a process's status.
func (s *devServer) processStatus(ns, name string) v4.WorkloadStatus {
	s.t.Helper()
	var p v4.Process
	if err := json.Unmarshal([]byte(s.mustBerth("get", "process", name, "-n", ns, "-o", "json")), &p); err != nil {
		s.t.Fatal(err)
	}
	return p.Status
}

// cleanupProcesses deletes every process of ns at the end of the test and waits for their
// task groups to go, so nothing keeps running (registered before the agents' cleanup, so
// it runs while they still do).
func (s *devServer) cleanupProcesses(ns string) { s.cleanupOwners(ns, "processes", 30*time.Second) }

// cleanupOwners deletes every object of plural (applications or processes) in ns when the
// test ends and waits up to limit for their task groups to go.
func (s *devServer) cleanupOwners(ns, plural string, limit time.Duration) {
	s.cleanupAllOwners(ns, limit, plural)
}

// cleanupAllOwners is cleanupOwners of several kinds that share ns: all are deleted
// before the wait for the namespace's task groups.
func (s *devServer) cleanupAllOwners(ns string, limit time.Duration, plurals ...string) {
	plural := strings.Join(plurals, " and ")
	s.t.Cleanup(func() {
		for _, p := range plurals {
			out := s.berth("", "get", p, "-n", ns, "-o", "name")
			for _, line := range strings.Fields(out.stdout) {
				if kind, name, ok := strings.Cut(line, "/"); ok {
					s.berth("", "delete", kind, name, "-n", ns, "--ignore-not-found")
				}
			}
		}
		deadline := time.Now().Add(limit)
		for time.Now().Before(deadline) {
			if r := s.berth("", "get", "taskgroups", "-n", ns, "-o", "name"); strings.TrimSpace(r.stdout) == "" {
				return
			}
			time.Sleep(300 * time.Millisecond)
		}
		s.t.Errorf("task groups of %s still there %s after deleting their %s", ns, limit, plural)
	})
}

var webDemoTarball []byte

// webDemoPackage builds examples/web-demo and its start script into a tar.gz (once).
func webDemoPackage(t *testing.T) []byte {
	t.Helper()
	if webDemoTarball != nil {
		return webDemoTarball
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "web-demo"), "github.com/berthhq/berth/examples/web-demo")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build web-demo: %v\n%s", err, out)
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []string{filepath.Join(dir, "web-demo"), "../../examples/web-demo/start.sh"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tw.WriteHeader(&tar.Header{Name: filepath.Base(f), Mode: 0o755, Size: int64(len(b)), Typeflag: tar.TypeReg})
		tw.Write(b)
	}
	tw.Close()
	gz.Close()
	webDemoTarball = buf.Bytes()
	return webDemoTarball
}

// packageServer serves the web-demo package with basic auth, like a BCS package
// repository: /web-demo.tar.gz for user "deploy" with password "s3cret".
func packageServer(t *testing.T) *httptest.Server {
	t.Helper()
	pkg := webDemoPackage(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "deploy" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="packages"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.URL.Path != "/web-demo.tar.gz" {
			http.NotFound(w, r)
			return
		}
		w.Write(pkg)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// httpGet fetches a URL of a workload on this machine (plain HTTP) with a short timeout.
func httpGet(url string) (int, string, error) { return httpGetWith(http.DefaultClient, url) }

// httpGet fetches a URL of the server (HTTPS, trusting its CA) with a short timeout.
func (s *devServer) httpGet(url string) (int, string, error) { return httpGetWith(s.http, url) }

func httpGetWith(hc *http.Client, url string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func fmtSpec(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// httpPost sends an empty POST to a URL of a workload on this machine (plain HTTP).
func httpPost(url string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
