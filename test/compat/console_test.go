package compat

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/testutil/requires"
	"github.com/berthhq/berth/test/berthtest"
)

// An unmodified Lain console (docs/migrate-from-deployd.md) sends deployd's requests
// with no credential. It authenticates with a client certificate bound to a token of the
// policy examples/lain/console-policy.yaml, presented by the console's TLS proxy; here
// the policy's namespaces are narrowed to the test's app and deployd's, so that a write
// elsewhere shows the 403.

// consolePolicy is the example policy with its workload rules narrowed to the
// namespaces hello and deployd.
func consolePolicy(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../../examples/lain/console-policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The workloads' rules only: validating ports reads every namespace's services.
	workloads := "namespaces: [\"*\"]\n    kinds: [deployment"
	narrowed := strings.ReplaceAll(string(doc), workloads, "namespaces: [hello, deployd]\n    kinds: [deployment")
	if strings.Count(string(doc), workloads) != 2 {
		t.Fatalf("the example policy has not the two workload rules of every namespace to narrow:\n%s", doc)
	}
	return narrowed
}

// consoleCertificate applies the console's policy and makes its token and certificate
// with the berth CLI, as an operator would; it returns the files' prefix and the token.
func (b *berth) consoleCertificate(t *testing.T) (prefix, token string) {
	t.Helper()
	if status, _, body := b.do(t, http.MethodPut, "/v1/acl/policies/lain-console", http.Header{"Content-Type": {"application/yaml"}}, consolePolicy(t)); status != http.StatusOK {
		t.Fatalf("policy: %d %s", status, body)
	}
	prefix = filepath.Join(t.TempDir(), "lain-console")
	out := b.cli(t, "acl", "token", "create", "--name", "lain-console", "--policy", "lain-console", "--client-cert", prefix, "--cert-ttl", "24h", "-o", "name")
	return prefix, strings.TrimSpace(out)
}

// cli runs the berth CLI as the management token against b.
func (b *berth) cli(t *testing.T, args ...string) string {
	t.Helper()
	admin, err := os.ReadFile(filepath.Join(b.dataDir, "admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(berthBin, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "BERTH_SERVER="+b.url, "BERTH_TOKEN="+strings.TrimSpace(string(admin)),
		"BERTH_CA_CERT="+filepath.Join(b.dataDir, "ca.crt"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("berth %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// console is Lain's console: deployd's API at base, called through hc with no token.
type console struct {
	base string
	hc   *http.Client
}

func (c console) call(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json") // as Python's requests with json=
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// podGroup is a Lain pod group of ns, placed nowhere (so nothing is pulled), that mounts
// a system volume as Lain's console adds them.
func podGroup(ns string, instances int) string {
	return fmt.Sprintf(`{"Name": "%[1]s.web.web", "Namespace": %[1]q, "NumInstances": %[2]d, "RestartPolicy": 1,
 "Pod": {"Name": "%[1]s.web.web", "Namespace": %[1]q, "Filters": ["constraint:node==no-such-node"],
  "Containers": [{"Image": "registry.lain.local/%[1]s:release", "Command": ["./web"], "Expose": 8000, "CpuLimit": 1, "MemoryLimit": 67108864,
   "SystemVolumes": ["/etc/localtime:/etc/localtime:ro"]}]}}`, ns, instances)
}

const portal = `{"Name": "hello.portal.p", "Namespace": "hello", "Filters": ["constraint:node==no-such-node"],
 "Containers": [{"Image": "registry.lain.local/hello:release", "Command": ["./portal"], "Expose": 9000, "CpuLimit": 1, "MemoryLimit": 67108864}]}`

// driveConsole makes the console's calls (its deployd client: status, pod groups, ports,
// dependencies) and checks deployd's answers; a write outside the policy's namespaces is
// refused with 403.
func driveConsole(t *testing.T, c console) {
	t.Helper()
	steps := []struct {
		name, method, path, body string
		status                   int
		contains                 string
	}{
		{"the engine's status", http.MethodGet, "/api/status", "", http.StatusOK, "started"},
		{"validate ports", http.MethodPost, "/api/ports?cmd=validate", `{"Ports": [9000]}`, http.StatusOK, "null"},
		{"register a portal", http.MethodPost, "/api/depends", portal, http.StatusAccepted, "check_url"},
		{"the portal", http.MethodGet, "/api/depends?name=hello.portal.p", "", http.StatusOK, "hello.portal.p"},
		{"update the portal", http.MethodPut, "/api/depends", portal, http.StatusAccepted, "check_url"},
		{"create a pod group", http.MethodPost, "/api/podgroups", podGroup("hello", 1), http.StatusAccepted, "check_url"},
		{"the pod group", http.MethodGet, "/api/podgroups?name=hello.web.web&force_update=false", "", http.StatusOK, `"NumInstances":1`},
		{"scale it", http.MethodPatch, "/api/podgroups?name=hello.web.web&num_instances=2&cmd=replica", "", http.StatusAccepted, "check_url"},
		{"a new spec", http.MethodPatch, "/api/podgroups?name=hello.web.web&cmd=spec",
			`{"Containers": [{"Image": "registry.lain.local/hello:release-2", "Command": ["./web"], "Expose": 8000, "CpuLimit": 1, "MemoryLimit": 67108864}],
			  "Filters": ["constraint:node==no-such-node"]}`, http.StatusAccepted, "check_url"},
		{"a pod group of an app the policy does not grant", http.MethodPost, "/api/podgroups", podGroup("other", 1), http.StatusForbidden, "may not write deployment in namespace other"},
		{"remove the pod group", http.MethodDelete, "/api/podgroups?name=hello.web.web", "", http.StatusAccepted, "check_url"},
		{"remove the portal", http.MethodDelete, "/api/depends?name=hello.portal.p", "", http.StatusAccepted, "check_url"},
	}
	for _, s := range steps {
		status, body := c.call(t, s.method, s.path, s.body)
		if status != s.status || !strings.Contains(body, s.contains) {
			t.Errorf("%s (%s %s): %d %s, want %d with %q", s.name, s.method, s.path, status, body, s.status, s.contains)
		}
	}
}

// The console's calls with only the client certificate: no token anywhere. Without the
// certificate they are refused (401), and once the token is revoked the certificate is
// refused too.
func TestLainConsoleByClientCertificate(t *testing.T) {
	b := startBerth(t)
	prefix, token := b.consoleCertificate(t)
	cert, err := tls.LoadX509KeyPair(prefix+".crt", prefix+".key")
	if err != nil {
		t.Fatal(err)
	}
	roots, err := client.LoadCAFile(prefix + "-ca.crt")
	if err != nil {
		t.Fatal(err)
	}
	withCert := console{base: b.url, hc: client.HTTPClient(roots, func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil })}
	driveConsole(t, withCert)

	nobody := console{base: b.url, hc: client.HTTPClient(roots, nil)}
	if status, body := nobody.call(t, http.MethodGet, "/api/status", ""); status != http.StatusUnauthorized {
		t.Errorf("no certificate: %d %s, want 401", status, body)
	}
	b.cli(t, "acl", "token", "revoke", strings.SplitN(token, ".", 2)[0])
	if status, body := withCert.call(t, http.MethodGet, "/api/status", ""); status != http.StatusUnauthorized || !strings.Contains(body, "revoked") {
		t.Errorf("the revoked token's certificate: %d %s, want 401", status, body)
	}
}

// haproxy as the console's proxy (docs/migrate-from-deployd.md): the console speaks plain
// HTTP to it on loopback, and it presents the credential to berth over TLS, verifying
// berth's certificate with the cluster CA: the client certificate, or else a token it
// adds as the Authorization header.
func TestLainConsoleThroughHAProxy(t *testing.T) {
	bin := requires.HAProxy(t)
	b := startBerth(t)
	prefix, token := b.consoleCertificate(t)
	certPEM, err := os.ReadFile(prefix + ".crt")
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := os.ReadFile(prefix + ".key")
	if err != nil {
		t.Fatal(err)
	}
	// haproxy reads the certificate and its key from one file.
	pemFile := prefix + ".pem"
	if err := os.WriteFile(pemFile, append(certPEM, keyPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	berthAddr := strings.TrimPrefix(b.url, "https://")
	ca := prefix + "-ca.crt"
	t.Run("client certificate", func(t *testing.T) {
		driveConsole(t, startHAProxy(t, bin, fmt.Sprintf(haproxyConsoleConfig, berthtest.FreeAddr(t), "# The certificate is the console's only credential.\n    http-request del-header Authorization",
			berthAddr, ca, " crt "+pemFile)))
	})
	// The first run's deletes are done before the second creates the same objects.
	b.waitGone(t, "/v1/namespaces/hello/deployments/hello-web-web")
	b.waitGone(t, "/v1/namespaces/deployd/dependencies/hello-portal-p")
	t.Run("bearer token", func(t *testing.T) {
		driveConsole(t, startHAProxy(t, bin, fmt.Sprintf(haproxyConsoleConfig, berthtest.FreeAddr(t), "http-request set-header Authorization \"Bearer "+token+"\"",
			berthAddr, ca, "")))
	})
}

// waitGone waits, up to 30 s, until path answers 404.
func (b *berth) waitGone(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if status, _, _ := b.do(t, http.MethodGet, path, nil, ""); status == http.StatusNotFound {
			return
		}
	}
	t.Fatalf("%s is still there after 30 s", path)
}

// startHAProxy runs haproxy with conf until the test ends and returns the console that
// calls its frontend (conf's first bind).
func startHAProxy(t *testing.T, bin, conf string) console {
	t.Helper()
	_, rest, _ := strings.Cut(conf, "bind ")
	listen, _, _ := strings.Cut(rest, "\n")
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-db", "-f", cfg)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("haproxy:\n%s", logs.String())
		}
	})
	c := console{base: "http://" + listen, hc: &http.Client{Timeout: 30 * time.Second}}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := c.hc.Get(c.base + "/api/status")
		if err == nil {
			resp.Body.Close()
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy does not answer on %s: %v\n%s", listen, err, logs.String())
		}
	}
}

// haproxyConsoleConfig is the guide's configuration (docs/migrate-from-deployd.md) with
// the test's values: the listen address, what the frontend does with Authorization,
// berth's address, the CA and the server line's credential (" crt FILE" or none).
const haproxyConsoleConfig = `global
    log stderr format raw local0 warning

defaults
    mode http
    log global
    timeout connect 5s
    timeout client 60s
    timeout server 60s

frontend deployd
    bind %s
    %s
    default_backend berth

backend berth
    server berth %s ssl verify required ca-file %s%s sni str(localhost) verifyhost localhost
`
