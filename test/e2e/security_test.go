package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/pki"
)

// nodeClient is an HTTPS client of s presenting the node certificate an agent keeps in
// its data dir: what someone who took that node could do.
func nodeClient(t *testing.T, s *devServer, a *agentProc) *http.Client {
	t.Helper()
	dir := filepath.Join(a.dataDir, "tls")
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "node.crt"), filepath.Join(dir, "node.key"))
	if err != nil {
		t.Fatal(err)
	}
	return client.HTTPClient(s.roots, func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil })
}

// call sends one request and returns its status and body.
func call(t *testing.T, hc *http.Client, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestNodeIdentityAndAgentRedirect attacks a real server and two real agents as a node's
// thief and as someone on the network would: every attempt is refused with what is
// missing, and the server never talks to a machine that is not the node's agent.
func TestNodeIdentityAndAgentRedirect(t *testing.T) {
	requireRoot(t)
	s := startServer(t, t.TempDir())
	agents := map[string]*agentProc{
		"sec-a": startAgent(t, s, "sec-a", "31500-31549"),
		"sec-b": startAgent(t, s, "sec-b", "31550-31599"),
	}
	defer s.cleanupProcesses("sec")
	s.applySpec(t, `{"apiVersion":"v4","kind":"secret","metadata":{"name":"pw","namespace":"sec"},"datas":{"k":{"content":"aHVudGVyMg=="}}}`)
	s.applySpec(t, `{"apiVersion":"v4","kind":"process","metadata":{"name":"holder","namespace":"sec"},
	"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"sleep",
		"startCmd":"echo started; exec sleep 3600",
		"secrets":[{"secretName":"pw","items":[{"type":"env","dataKey":"k","keyOrPath":"PW"}]}],
		"resources":{"limits":{"cpu":"0.1","memory":"16"}}}]}}}}`)
	tg := s.running(t, "sec", "holder", 1)[0]
	owner := agents[tg.Spec.Node]
	var other *agentProc
	for name, a := range agents {
		if name != tg.Spec.Node {
			other = a
		}
	}
	waitUntil(t, 20*time.Second, "the task group's logs through the server", func() bool {
		r := s.berth("", "logs", "-n", "sec", tg.Metadata.Name)
		return r.code == 0 && strings.Contains(r.stdout, "started")
	})

	// The other node's certificate reads nothing of the owner's and cannot act for it.
	thief := nodeClient(t, s, other)
	csr, _, err := pki.NewCSR(other.name)
	if err != nil {
		t.Fatal(err)
	}
	renew, _ := json.Marshal(v4.AgentCertificateRequest{NodeName: owner.name, CSR: string(csr)})
	status, _ := json.Marshal(v4.TaskGroupStatus{Phase: v4.StatusFailed})
	for _, c := range []struct{ method, path, body, want string }{
		{http.MethodGet, "/v1/agent/nodes/" + owner.name + "/taskgroups", "", "cannot act for node " + owner.name},
		{http.MethodGet, "/v1/agent/secrets/sec/pw", "", "no task group of node " + other.name},
		{http.MethodPut, "/v1/agent/taskgroups/sec/" + tg.Metadata.Name + "/status", string(status), "certificate is for node " + other.name},
		{http.MethodPost, "/v1/agent/register", `{"metadata":{"name":"` + owner.name + `"},"spec":{"ip":"127.0.0.1"}}`, "cannot register node"},
		{http.MethodPost, "/v1/agent/certificate/renew", string(renew), "cannot rename it"},
	} {
		code, body := call(t, thief, c.method, s.url+c.path, c.body)
		if code != http.StatusForbidden || !strings.Contains(body, c.want) {
			t.Errorf("%s %s with %s's certificate: %d %s, want 403 %q", c.method, c.path, other.name, code, body, c.want)
		}
	}
	// The owner's own certificate reads the secret its task group uses.
	if code, body := call(t, nodeClient(t, s, owner), http.MethodGet, s.url+"/v1/agent/secrets/sec/pw", ""); code != http.StatusOK || !strings.Contains(body, "aHVudGVyMg==") {
		t.Fatalf("the owner reads its secret: %d %s", code, body)
	}
	// Without a certificate, or with one of another CA, an agent route gives nothing.
	if code, body := call(t, s.http, http.MethodGet, s.url+"/v1/agent/nodes/"+owner.name+"/taskgroups", ""); code != http.StatusUnauthorized || !strings.Contains(body, "client certificate") {
		t.Errorf("no certificate: %d %s", code, body)
	}
	foreign, err := pki.NewCA("attacker", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	kp, err := foreign.Issue(pki.Request{CommonName: owner.name, Organization: pki.OrgNodes, Client: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	forged, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	forger := client.HTTPClient(s.roots, func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &forged, nil })
	if resp, err := forger.Get(s.url + "/v1/agent/nodes/" + owner.name + "/taskgroups"); err == nil {
		resp.Body.Close()
		t.Errorf("a certificate of another CA got %d", resp.StatusCode)
	}
	// Plain HTTP gets nothing; a client that does not trust the CA stops before sending.
	if code, body := call(t, http.DefaultClient, http.MethodGet, strings.Replace(s.url, "https://", "http://", 1)+"/v1/secrets", ""); code != http.StatusBadRequest || strings.Contains(body, "aHVudGVyMg==") {
		t.Errorf("plain HTTP: %d %s", code, body)
	}
	untrusted := *s
	untrusted.caFile = filepath.Join(t.TempDir(), "none.crt")
	os.WriteFile(untrusted.caFile, foreign.CertPEM, 0o644)
	if r := untrusted.berth("", "get", "secrets", "-A"); r.code == 0 || !strings.Contains(r.stderr, "cannot verify the berth server") {
		t.Errorf("a CLI trusting another CA: %d %s", r.code, r.stderr)
	}

	// A user cannot point the node elsewhere (the server would send users' logs and exec
	// sessions there).
	code, body := call(t, s.http, http.MethodPatch, s.url+"/v1/nodes/"+owner.name, `{"status":{"agentAddress":"127.0.0.1:9999"}}`)
	if code != http.StatusForbidden || !strings.Contains(body, `"field":"status.agentAddress"`) {
		t.Fatalf("PATCH of status.agentAddress: %d %s", code, body)
	}

	// Even if the owner's address pointed elsewhere (here: its stolen certificate says so,
	// with the real agent stopped), the server sends nothing to what answers there: a TLS
	// server of another CA, or the other node's real agent.
	var received atomic.Int32
	attacker := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer attacker.Close()
	owner.kill()
	defer owner.start()
	otherNode := s.berth("", "get", "node", other.name, "-o", "json")
	var on v4.Node
	if err := json.Unmarshal([]byte(otherNode.stdout), &on); err != nil {
		t.Fatal(err)
	}
	stolen := nodeClient(t, s, owner)
	for _, c := range []struct{ addr, want string }{
		{strings.TrimPrefix(attacker.URL, "https://"), "not from this cluster's CA"},
		{on.Status.AgentAddress, "not node " + owner.name + "'s agent"},
	} {
		if code, body := call(t, stolen, http.MethodPut, s.url+"/v1/agent/nodes/"+owner.name+"/heartbeat", `{"agentAddress":"`+c.addr+`"}`); code != http.StatusNoContent {
			t.Fatalf("heartbeat: %d %s", code, body)
		}
		r := s.berth("", "logs", "-n", "sec", tg.Metadata.Name)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("logs through %s: %d %q %q, want refused with %q", c.addr, r.code, r.stdout, r.stderr, c.want)
		}
	}
	if n := received.Load(); n != 0 {
		t.Fatalf("the attacker's server received %d requests", n)
	}
}

// TestJoinTokensAndCertificateRotation: a revoked or expired token joins nothing; an
// agent joined with a token keeps working while its certificate and the server's are
// renewed (a one-minute lifetime renews them after about 44 s).
func TestJoinTokensAndCertificateRotation(t *testing.T) {
	requireRoot(t)
	s := startBerth(t, t.TempDir(), "server", "--cert-lifetime", "1m")
	create := func(ttl string) string {
		t.Helper()
		return strings.TrimSpace(s.mustBerth("token", "create", "--ttl", ttl, "-o", "name"))
	}
	revoked, expired, good := create("1h"), create("1s"), create("1h")
	id, _, _ := strings.Cut(revoked, ".")
	s.mustBerth("token", "revoke", id)
	time.Sleep(1500 * time.Millisecond)
	for _, c := range []struct{ token, want string }{
		{revoked, "unknown or revoked join token"},
		{expired, "expired"},
		{"berth-abcdef.0123456789abcdef0123456789abcdef::sha256:" + strings.Repeat("0", 64), "no CA with hash"},
	} {
		a := &agentProc{t: t, name: "refused", dataDir: t.TempDir(), args: []string{"agent", "--server", s.url, "--token", c.token,
			"--data-dir", filepath.Join(t.TempDir(), "a"), "--node-name", "refused", "--listen", "127.0.0.1:0", "--ip", "127.0.0.1"}}
		a.start()
		select {
		case <-a.exited:
		case <-time.After(30 * time.Second):
			a.kill()
			t.Fatalf("an agent with a bad token (%s) kept running:\n%s", c.want, a.logs.String())
		}
		if a.cmd.ProcessState.ExitCode() == 0 || !strings.Contains(a.logs.String(), c.want) {
			t.Errorf("agent with a bad token: exit %d, output %s; want %q", a.cmd.ProcessState.ExitCode(), a.logs.String(), c.want)
		}
	}
	if out := s.mustBerth("get", "nodes"); strings.Contains(out, "refused") {
		t.Fatalf("a refused agent registered:\n%s", out)
	}

	a := startAgent(t, s, "rot", "31600-31649", "--token", good)
	defer s.cleanupProcesses("rot")
	s.applySpec(t, `{"apiVersion":"v4","kind":"process","metadata":{"name":"web","namespace":"rot"},
	"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"sleep","startCmd":"echo up; exec sleep 3600",
		"resources":{"limits":{"cpu":"0.1","memory":"16"}}}]}}}}`)
	tg := s.running(t, "rot", "web", 1)[0]
	serial := func() string {
		c, err := pki.ParseCertificate([]byte(mustRead(t, filepath.Join(a.dataDir, "tls", "node.crt"))))
		if err != nil {
			t.Fatal(err)
		}
		return c.SerialNumber.String()
	}
	serving := func() string {
		conn, err := tls.Dial("tcp", strings.TrimPrefix(s.url, "https://"), &tls.Config{RootCAs: s.roots})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	firstNode, firstServing := serial(), serving()
	waitUntil(t, 90*time.Second, "the node's and the server's certificates renewed", func() bool {
		return serial() != firstNode && serving() != firstServing
	})
	// Both ways still work: the server reaches the agent, the agent reports to the server.
	waitUntil(t, 20*time.Second, "logs after the renewal", func() bool {
		r := s.berth("", "logs", "-n", "rot", tg.Metadata.Name)
		return r.code == 0 && strings.Contains(r.stdout, "up")
	})
	s.mustBerth("scale", "process", "web", "2", "-n", "rot")
	s.running(t, "rot", "web", 2)
}

// as is a CLI and HTTPS target of s's servers with another token ("" for none).
func (s *devServer) as(token string) *devServer {
	other := *s
	other.useToken(token)
	return &other
}

// TestUsersAndPolicies: without a token nothing is allowed, not even berth exec; a
// read-only token reads, and cannot write, exec, read logs or secrets; a revoked token
// stops working at once. Each refusal names what is missing.
func TestUsersAndPolicies(t *testing.T) {
	requireRoot(t)
	s := startDev(t, t.TempDir())
	defer s.cleanupProcesses("acl")
	s.applySpec(t, `{"apiVersion":"v4","kind":"secret","metadata":{"name":"pw","namespace":"acl"},"datas":{"k":{"content":"aHVudGVyMg=="}}}`)
	s.applySpec(t, `{"apiVersion":"v4","kind":"process","metadata":{"name":"web","namespace":"acl"},
	"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"sleep","startCmd":"echo hi; exec sleep 3600",
		"secrets":[{"secretName":"pw","items":[{"type":"file","dataKey":"k","keyOrPath":"${workPath}/pw.txt"}]}],
		"resources":{"limits":{"cpu":"0.1","memory":"16"}}}]}}}}`)
	tg := s.running(t, "acl", "web", 1)[0].Metadata.Name
	// The secret's file is the task user's alone.
	files, _ := filepath.Glob(filepath.Join(s.dataDir, "agent", "pods", "*", "work", "pw.txt"))
	if len(files) != 1 {
		t.Fatalf("secret files %v", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret file %s: %v %v, want mode 0600", files[0], fi.Mode(), err)
	}

	anon := s.as("")
	for _, args := range [][]string{
		{"exec", "-n", "acl", tg, "--", "id"},
		{"get", "secrets", "-A"},
		{"get", "secret", "pw", "-n", "acl", "-o", "json"},
		{"apply", "-f", "-"},
	} {
		r := anon.berth(`{"apiVersion":"v4","kind":"configmap","metadata":{"name":"x","namespace":"acl"},"datas":{}}`, args...)
		if r.code == 0 || !strings.Contains(r.stderr, "401: no token") || !strings.Contains(r.stderr, "BERTH_TOKEN") || strings.Contains(r.stdout+r.stderr, "aHVudGVyMg==") {
			t.Errorf("anonymous berth %v: %d %s %s", args, r.code, r.stdout, r.stderr)
		}
	}

	policy := filepath.Join(t.TempDir(), "ro.yaml")
	os.WriteFile(policy, []byte("kind: acl-policy\nmetadata: {name: readonly}\nrules:\n  - {namespaces: [\"*\"], kinds: [\"*\"], verbs: [read]}\n"), 0o644)
	s.mustBerth("acl", "policy", "apply", "-f", policy)
	ro := s.as(strings.TrimSpace(s.mustBerth("acl", "token", "create", "--policy", "readonly", "--name", "reader", "-o", "name")))
	if out := ro.mustBerth("get", "processes", "-n", "acl"); !strings.Contains(out, "web") {
		t.Fatalf("the read-only token cannot read: %s", out)
	}
	if out := ro.mustBerth("whoami"); !strings.Contains(out, "policies readonly") {
		t.Errorf("whoami: %s", out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"scale", "process", "web", "2", "-n", "acl"}, "may not scale process in namespace acl"},
		{[]string{"delete", "process", "web", "-n", "acl"}, "may not write process in namespace acl"},
		{[]string{"exec", "-n", "acl", tg, "--", "id"}, "may not run commands in task group in namespace acl"},
		{[]string{"logs", "-n", "acl", tg}, "may not read the logs of task group in namespace acl"},
		{[]string{"get", "secret", "pw", "-n", "acl", "-o", "json"}, "may not read secret in namespace acl"},
		{[]string{"token", "create"}, "may not administer the cluster"},
	} {
		r := ro.berth("", c.args...)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stdout, "aHVudGVyMg==") {
			t.Errorf("read-only berth %v: %d %s %s, want %q", c.args, r.code, r.stdout, r.stderr, c.want)
		}
	}
	if r := ro.berth("", "auth", "can-i", "exec", "taskgroup", "-n", "acl"); r.code != 1 || strings.TrimSpace(r.stdout) != "no" {
		t.Errorf("can-i exec: %d %q", r.code, r.stdout)
	}
	if r := ro.berth("", "auth", "can-i", "read", "process", "-n", "acl"); r.code != 0 || strings.TrimSpace(r.stdout) != "yes" {
		t.Errorf("can-i read: %d %q", r.code, r.stdout)
	}
	// The management token still does all of it.
	if out := s.mustBerth("exec", "-n", "acl", tg, "--", "echo", "allowed"); !strings.Contains(out, "allowed") {
		t.Errorf("management exec: %q", out)
	}
	execTerminalInProcess(t, s, "acl", tg)
	usageOfProcess(t, s, "acl", tg)
	// A token that may deploy in the namespace still cannot take the node: root processes,
	// privileged containers, the host's root file system, its pid namespace, capabilities
	// or devices are privileges a policy must grant by name.
	os.WriteFile(policy, []byte("kind: acl-policy\nmetadata: {name: deployer}\nrules:\n  - {namespaces: [acl], kinds: [\"*\"], verbs: [read, write]}\n"), 0o644)
	s.mustBerth("acl", "policy", "apply", "-f", policy)
	dep := s.as(strings.TrimSpace(s.mustBerth("acl", "token", "create", "--policy", "deployer", "-o", "name")))
	app := func(extra string) string {
		return `{"apiVersion":"v4","kind":"application","metadata":{"name":"evil","namespace":"acl"},"spec":{"instance":1,"template":{"spec":{"networkMode":"BRIDGE","containers":[{"image":"busybox",` + extra + `}]}}}}`
	}
	for _, c := range []struct{ spec, field, priv string }{
		{`{"apiVersion":"v4","kind":"process","metadata":{"name":"evil","namespace":"acl"},"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"sh","user":"root","startCmd":"cat /etc/shadow"}]}}}}`,
			"spec.template.spec.processes[0].user", "root"},
		{app(`"privileged":true`), "spec.template.spec.containers[0].privileged", "privileged"},
		{app(`"volumes":[{"volume":{"hostPath":"/","mountPath":"/host"}}]`), "spec.template.spec.containers[0].volumes[0].volume.hostPath", "host-path"},
		{app(`"parameters":[{"key":"pid","value":"host"}]`), "spec.template.spec.containers[0].parameters[0]", "host-pid"},
		{app(`"parameters":[{"key":"cap-add","value":"SYS_ADMIN"}]`), "spec.template.spec.containers[0].parameters[0]", "cap-add"},
		{app(`"parameters":[{"key":"device","value":"/dev/vda"}]`), "spec.template.spec.containers[0].parameters[0]", "devices"},
	} {
		r := dep.berth(c.spec, "apply", "-f", "-")
		if r.code == 0 || !strings.Contains(r.stderr, c.field) || !strings.Contains(r.stderr, `privilege "`+c.priv+`"`) {
			t.Errorf("deployer applies %s: %d %s %s, want refused naming %s and %s", c.priv, r.code, r.stdout, r.stderr, c.field, c.priv)
		}
	}
	if out := s.mustBerth("get", "apps", "-n", "acl"); strings.Contains(out, "evil") {
		t.Fatalf("a refused application was stored: %s", out)
	}

	id, _, _ := strings.Cut(ro.token, ".")
	s.mustBerth("acl", "token", "revoke", id)
	if r := ro.berth("", "get", "processes", "-n", "acl"); r.code == 0 || !strings.Contains(r.stderr, "unknown or revoked") {
		t.Errorf("a revoked token: %d %s", r.code, r.stderr)
	}
}

// TestSecretValuesStayOutOfSight: a secret a process takes as an environment variable and
// as a file reaches the process, and its value appears in no event, no description, no
// object, no audit line and no line of the server's log.
func TestSecretValuesStayOutOfSight(t *testing.T) {
	requireRoot(t)
	const value = "s3cr3t-value-for-the-test" // base64 below
	s := startDev(t, t.TempDir())
	s.applySpec(t, `{"apiVersion":"v4","kind":"secret","metadata":{"name":"db","namespace":"hush"},"datas":{"pw":{"content":"czNjcjN0LXZhbHVlLWZvci10aGUtdGVzdA=="}}}`)
	s.applySpec(t, `{"apiVersion":"v4","kind":"process","metadata":{"name":"app","namespace":"hush"},
	"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"sleep",
		"startCmd":"test -n \"$DB_PW\" && test \"$DB_PW\" = \"$(cat ${workPath}/pw)\" && exec sleep 3600",
		"secrets":[{"secretName":"db","items":[{"type":"env","dataKey":"pw","keyOrPath":"DB_PW"},{"type":"file","dataKey":"pw","keyOrPath":"${workPath}/pw"}]}],
		"resources":{"limits":{"cpu":"0.1","memory":"16"}}}]}}}}`)
	tg := s.running(t, "hush", "app", 1)[0].Metadata.Name
	var seen []string
	for _, args := range [][]string{
		{"describe", "process", "app", "-n", "hush"},
		{"describe", "taskgroup", tg, "-n", "hush"},
		{"get", "process", "app", "-n", "hush", "-o", "json"},
		{"get", "taskgroup", tg, "-n", "hush", "-o", "json"},
		{"events", "-n", "hush"},
		{"logs", "-n", "hush", tg},
	} {
		out := s.mustBerth(args...)
		if strings.Contains(out, value) {
			seen = append(seen, strings.Join(args, " "))
		}
	}
	s.mustBerth("delete", "process", "app", "-n", "hush")
	waitUntil(t, 30*time.Second, "the process gone", func() bool {
		return strings.TrimSpace(s.berth("", "get", "taskgroups", "-n", "hush", "-o", "name").stdout) == ""
	})
	s.stop() // the log is complete, and safe to read, once the process exited
	if strings.Contains(s.logs.String(), value) {
		seen = append(seen, "the server's log")
	}
	if audit, err := os.ReadFile(filepath.Join(s.dataDir, "audit.log")); err != nil || strings.Contains(string(audit), value) || len(audit) == 0 {
		seen = append(seen, "the audit log (or it is missing)")
	}
	if len(seen) > 0 {
		t.Fatalf("the secret's value shows in: %s", strings.Join(seen, ", "))
	}
}

// execTerminalInProcess: berth exec -it in a process task gets a terminal of its own, as the
// task's user (the agent's dynamic uid, not root), sized as the client's.
func execTerminalInProcess(t *testing.T, s *devServer, ns, tg string) {
	t.Helper()
	c := s.apiClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resize := make(chan v4.TermSize, 1)
	resize <- v4.TermSize{Rows: 33, Cols: 99}
	var out bytes.Buffer
	code, err := c.Exec(ctx, ns, tg, client.ExecOptions{Cmd: []string{"sh", "-c",
		`for i in $(seq 50); do [ "$(stty size)" = "33 99" ] && break; sleep 0.1; done; id -u; tty; stty size; exit 3`},
		TTY: true, Stdout: &out, Resize: resize})
	lines := strings.Fields(out.String())
	if err != nil || code != 3 || len(lines) < 4 {
		t.Fatalf("exec -it in a process: %d %v %q", code, err, out.String())
	}
	if uid, _ := strconv.Atoi(lines[0]); uid < 80000 || !strings.HasPrefix(lines[1], "/dev/pts/") || lines[2] != "33" || lines[3] != "99" {
		t.Errorf("exec -it in a process: uid, tty and size %q, want a task uid, /dev/pts/N and 33 99", lines)
	}
}

// usageOfProcess: a running process task's usage is measured on its node (its cgroup).
func usageOfProcess(t *testing.T, s *devServer, ns, tg string) {
	t.Helper()
	c := s.apiClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, err := c.TaskGroupUsage(ctx, ns, tg)
	if err != nil || len(u.Tasks) != 1 || u.Tasks[0].Error != "" || u.Tasks[0].MemoryBytes == 0 || u.Tasks[0].MemoryLimitBytes != 16<<20 || u.Node == "" {
		t.Fatalf("usage of a process task: %+v %v", u, err)
	}
}
