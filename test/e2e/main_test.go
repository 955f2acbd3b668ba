// Package e2e runs the real berth binary: `berth dev` with its embedded etcd in a temporary
// data directory, driven through the CLI and HTTPS (trusting the cluster CA the server
// writes to its data dir), as a user would.
package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/test/berthtest"
)

var berthBin string

func TestMain(m *testing.M) {
	if dir := os.Getenv(benchHooksDirEnv); dir != "" { // a hook server of the policy benchmark
		os.Exit(serveBenchHooksProcess(dir))
	}
	berthtest.Main(m, &berthBin, "berth-e2e-bin", "-race")
}

// devServer is one running `berth dev` process (or, with cmd nil, a CLI target of
// several servers: url is then a comma list).
type devServer struct {
	t       testing.TB
	cmd     *exec.Cmd
	url     string
	dataDir string
	logs    *bytes.Buffer
	exited  chan struct{}
	// caFile is the cluster CA certificate (DATA-DIR/ca.crt) that verifies the server,
	// roots the same CA as a pool, and http an HTTPS client trusting it.
	caFile string
	roots  *x509.CertPool
	http   *http.Client
	// token is the cluster's management token (DATA-DIR/admin-token of the first
	// server): the CLI and http send it.
	token string
}

// caFileOf is where a server keeps its cluster's CA certificate.
func caFileOf(dataDir string) string { return filepath.Join(dataDir, "ca.crt") }

// joinTokenOf reads the join token (with the CA hash) a server wrote to its data dir.
func joinTokenOf(t testing.TB, dataDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "join-token"))
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		t.Fatalf("%s/join-token is empty", dataDir)
	}
	return tok
}

// trust sets s's CA from caFile (the server's, or another of the same cluster).
func (s *devServer) trust(caFile string) error {
	pool, err := client.LoadCAFile(caFile)
	if err != nil {
		return err
	}
	s.caFile, s.roots = caFile, pool
	s.useToken(s.token)
	return nil
}

// useToken makes s's CLI runs and HTTP calls send token.
func (s *devServer) useToken(token string) {
	s.token = token
	s.http = client.HTTPClient(s.roots, nil)
	if token != "" {
		s.http.Transport = &berthtest.Bearer{Token: token, Next: s.http.Transport}
	}
}

// adminTokenOf reads the management token a server wrote at the cluster's first start
// ("" for a server that joined a cluster: it has none).
func adminTokenOf(dataDir string) string {
	b, err := os.ReadFile(filepath.Join(dataDir, "admin-token"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// via is a CLI and HTTPS target of the comma list urls, trusting s's CA (every server of
// one cluster has the same).
func (s *devServer) via(t *testing.T, urls string) *devServer {
	return &devServer{t: t, url: urls, caFile: s.caFile, roots: s.roots, http: s.http, token: s.token}
}

// startDev runs `berth dev` on a free port with its data in dataDir (and the extra
// flags) and waits until /readyz answers 200.
func startDev(t *testing.T, dataDir string, flags ...string) *devServer {
	t.Helper()
	return startBerth(t, dataDir, "dev", flags...)
}

// passable opens the test's temporary directories above dir to other users' searches
// (0711; t.TempDir makes them 0700), as /var/lib is: the agent runs processes without a
// user as an unprivileged one, which must pass through to their work dirs.
func passable(t testing.TB, dir string) {
	t.Helper()
	tmp := filepath.Clean(os.TempDir())
	for p := filepath.Dir(filepath.Clean(dir)); strings.HasPrefix(p, tmp+"/"); p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o711); err != nil {
			t.Fatal(err)
		}
	}
}

// startBerth runs `berth dev` or `berth server` the same way.
func startBerth(t *testing.T, dataDir, command string, flags ...string) *devServer {
	t.Helper()
	return startBerthBinary(t, berthBin, dataDir, command, flags...)
}

// startBerthBinary is startBerth with another build of berth (the soak test measures one
// built without the race detector).
func startBerthBinary(t testing.TB, bin, dataDir, command string, flags ...string) *devServer {
	t.Helper()
	return startBerthAt(t, bin, berthtest.FreeAddr(t), dataDir, command, flags...)
}

// startBerthAt is startBerthBinary listening on addr (and reached there).
func startBerthAt(t testing.TB, bin, addr, dataDir, command string, flags ...string) *devServer {
	t.Helper()
	passable(t, dataDir)
	s := &devServer{t: t, url: "https://" + addr, dataDir: dataDir, logs: &bytes.Buffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command(bin, append([]string{command, "--listen", addr, "--data-dir", dataDir}, flags...)...)
	// berth dev writes a CLI config into $HOME: never the real one.
	s.cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Kill()
			<-s.exited
		}
		if command == "dev" { // killed, it left its service proxy's table
			removeProxyTable(dataDir)
		}
		if t.Failed() {
			t.Logf("berth dev output:\n%s", s.logs.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			t.Fatalf("berth dev exited early:\n%s", s.logs.String())
		default:
		}
		// The CA certificate is written once the server has started (a restarted
		// server's may be there before it listens: it is the same CA).
		if s.http == nil {
			s.token = adminTokenOf(dataDir)
			if _, err := os.Stat(caFileOf(dataDir)); err != nil || s.trust(caFileOf(dataDir)) != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
		}
		resp, err := s.http.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("berth dev not ready in 60s:\n%s", s.logs.String())
	return nil
}

// stop sends SIGTERM and requires a clean exit.
func (s *devServer) stop() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatal(err)
	}
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.t.Fatalf("berth dev did not stop within 30s of SIGTERM")
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		s.t.Fatalf("berth dev exited with %d after SIGTERM:\n%s", code, s.logs.String())
	}
}

// cliResult is what one CLI invocation printed.
type cliResult struct {
	stdout, stderr string
	code           int
}

// berth runs the CLI against the server, with stdin when given.
func (s *devServer) berth(stdin string, args ...string) cliResult {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, berthBin, args...)
	cmd.Env = s.cliEnv(s.t)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != "" {
		cmd.Stdin = bytes.NewBufferString(stdin)
	}
	err := cmd.Run()
	code := 0
	if err != nil {
		exitErr, ok := err.(*exec.ExitError)
		if !ok {
			s.t.Fatalf("berth %v: %v", args, err)
		}
		code = exitErr.ExitCode()
	}
	return cliResult{stdout: out.String(), stderr: errb.String(), code: code}
}

// cliEnv is the environment of a CLI run against s: its servers, its CA, no config file.
func (s *devServer) cliEnv(t testing.TB) []string {
	return append(os.Environ(), "BERTH_SERVER="+s.url, "BERTH_CA_CERT="+s.caFile, "BERTH_TOKEN="+s.token, "BERTH_CONFIG=", "HOME="+t.TempDir())
}

// mustBerth runs the CLI and fails the test on a non-zero exit.
func (s *devServer) mustBerth(args ...string) string {
	s.t.Helper()
	r := s.berth("", args...)
	if r.code != 0 {
		s.t.Fatalf("berth %v: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// eventsSay runs `berth events ARGS` until its output contains want (events are recorded
// a moment after what they tell of), and returns the last output; it fails the test
// after 10 s.
func (s *devServer) eventsSay(want string, args ...string) string {
	s.t.Helper()
	var out string
	deadline := time.Now().Add(10 * time.Second)
	for {
		out = s.mustBerth(append([]string{"events"}, args...)...)
		if strings.Contains(out, want) {
			return out
		}
		if time.Now().After(deadline) {
			s.t.Errorf("events do not say %q:\n%s", want, out)
			return out
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startSim runs `berth sim` against s with the cluster's join token from dataDir and
// args, until the test ends (its output is logged when the test fails).
func (s *devServer) startSim(t *testing.T, dataDir string, args ...string) {
	t.Helper()
	var logs bytes.Buffer
	sim := exec.Command(berthBin, append([]string{"sim", "--server", s.url, "--token", joinTokenOf(t, dataDir), "--data-dir", t.TempDir()}, args...)...)
	sim.Env = s.cliEnv(t)
	sim.Stdout, sim.Stderr = &logs, &logs
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	simDone := make(chan struct{})
	go func() { sim.Wait(); close(simDone) }()
	t.Cleanup(func() {
		sim.Process.Kill()
		<-simDone
		if t.Failed() {
			t.Logf("berth sim output:\n%s", logs.String())
		}
	})
}

// apiClient is a client of s's API with s's token and CA.
func (s *devServer) apiClient(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.New(s.url, client.WithHTTPClient(s.http))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
