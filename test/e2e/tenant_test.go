package e2e

import (
	"bufio"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/pki"
)

// TestTenantIsolation is the tenant suite (docs/security.md, "Threat model"): one cluster
// with security on and a node at every default (no --allow-privileged, no
// --host-volumes), two teams whose tokens may read, write, read logs, exec and scale in
// their own namespace only and hold no privilege. Team A attacks as a hostile tenant
// would; every attack is refused with a message naming the field, privilege or limit.
// Afterwards the canary tree (a root-only directory of the test's, the data dir's keys
// and tokens, /etc) is unchanged, a process of the host that no tenant owns was not
// signalled, and team B's secret reached team A by no way: env, files, events, notify.
func TestTenantIsolation(t *testing.T) {
	requireRoot(t)
	s := startDev(t, filepath.Join(t.TempDir(), "dev"), "--max-connections", "96", "--max-connections-per-source", "40")
	defer s.cleanupProcesses("team-a")
	defer s.cleanupProcesses("team-b")
	canary := filepath.Join(t.TempDir(), "canary")
	if err := os.MkdirAll(canary, 0o700); err != nil {
		t.Fatal(err)
	}
	rootOnly := filepath.Join(canary, "root-only")
	if err := os.WriteFile(rootOnly, []byte("canary-secret-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	canaryTrees := []string{canary, "/etc", filepath.Join(s.dataDir, "tls"), filepath.Join(s.dataDir, "admin-token"),
		filepath.Join(s.dataDir, "join-token"), filepath.Join(s.dataDir, "encryption.key")}
	before := treeSum(t, canaryTrees...)
	bystander := exec.Command("sleep", "3600")
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { bystander.Process.Kill(); bystander.Wait() }()

	a := s.as(teamToken(t, s, "team-a"))
	b := s.as(teamToken(t, s, "team-b"))

	// Team B runs a process holding a secret in its environment and in a file.
	const bSecret = "b-secret-7f3e9a"
	b.applySpec(t, `{"apiVersion":"v4","kind":"secret","metadata":{"name":"db","namespace":"team-b"},"datas":{"pw":{"content":"`+b64(bSecret)+`"}}}`)
	b.applySpec(t, `{"apiVersion":"v4","kind":"process","metadata":{"name":"vault","namespace":"team-b"},
	"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"sleep","startCmd":"exec sleep 3600",
		"secrets":[{"secretName":"db","items":[{"type":"env","dataKey":"pw","keyOrPath":"DB_PW"},{"type":"file","dataKey":"pw","keyOrPath":"${workPath}/pw.txt"}]}],
		"resources":{"limits":{"cpu":"0.1","memory":"16"}}}]}}}}`)
	victim := s.running(t, "team-b", "vault", 1)[0]
	victimPid := pidOf(victim)
	victimWork := filepath.Join(s.dataDir, "agent", "pods", "team-b."+victim.Metadata.Name, "work")

	// Team A's notify receiver: what team B's failures would tell it.
	var mu sync.Mutex
	var notified strings.Builder
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		mu.Lock()
		notified.Write(body)
		mu.Unlock()
	}))
	defer recv.Close()

	refused := func(t *testing.T, spec string, wants ...string) {
		t.Helper()
		r := a.berth(spec, "apply", "-f", "-")
		if r.code == 0 {
			t.Fatalf("applied: %s", r.stdout)
		}
		for _, w := range wants {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("refusal %q does not name %q", r.stderr, w)
			}
		}
	}
	proc := func(name, fields string) string {
		return `{"apiVersion":"v4","kind":"process","metadata":{"name":"` + name + `","namespace":"team-a"},"restartPolicy":{"policy":"Never"},
		"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"sleep",` + fields + `,"resources":{"limits":{"cpu":"0.1","memory":"16"}}}]}}}}`
	}
	app := func(name, extra string) string {
		return `{"apiVersion":"v4","kind":"application","metadata":{"name":"` + name + `","namespace":"team-a"},"spec":{"instance":1,"template":{"spec":{"networkMode":"NONE","containers":[{"image":"busybox",` + extra + `}]}}}}`
	}

	t.Run("pidFile on the host", func(t *testing.T) {
		refused(t, proc("pid1", `"pidFile":"`+rootOnly+`","startCmd":"exec sleep 60"`), "processes[0].pidFile", `privilege "host-path"`)
	})
	t.Run("pidFile linked to a root-only file", func(t *testing.T) {
		a.applySpec(t, proc("pid2", `"pidFile":"app.pid","startCmd":"ln -s `+rootOnly+` app.pid; exec sleep 60"`))
		tg := s.failedWith(t, "team-a", "pid2")
		if msg := tg.Status.Message; !strings.Contains(msg, "pid file") || strings.Contains(msg, "canary-secret") {
			t.Errorf("message %q: want the pid file refused, without what it points to", msg)
		}
	})
	t.Run("pidFile naming a process of the host", func(t *testing.T) {
		a.applySpec(t, proc("pid3", `"pidFile":"app.pid","startCmd":"echo `+strconv.Itoa(bystander.Process.Pid)+` > app.pid; exec sleep 60"`))
		tg := s.failedWith(t, "team-a", "pid3")
		if !strings.Contains(tg.Status.Message, "not one of the task's") {
			t.Errorf("message %q", tg.Status.Message)
		}
		a.mustBerth("delete", "process", "pid3", "-n", "team-a")
	})
	t.Run("workPath climbing out", func(t *testing.T) {
		refused(t, proc("climb", `"workPath":"${work_base_dir}/../..","startCmd":"exec sleep 60"`), "processes[0].workPath", "'..'")
		refused(t, proc("climb2", `"workPath":"/etc","startCmd":"exec sleep 60"`), "processes[0].workPath", `privilege "host-path"`)
	})
	t.Run("file URI of the data dir", func(t *testing.T) {
		refused(t, proc("steal", `"uris":[{"value":"file://`+filepath.Join(s.dataDir, "admin-token")+`"}],"startCmd":"exec sleep 60"`),
			"processes[0].uris[0].value", `privilege "host-path"`)
	})
	t.Run("root in another spelling", func(t *testing.T) {
		refused(t, proc("root", `"user":"00","startCmd":"exec sleep 60"`), "processes[0].user", `privilege "root"`)
	})
	t.Run("another account of the node", func(t *testing.T) {
		a.applySpec(t, proc("daemon", `"user":"daemon","startCmd":"exec sleep 60"`))
		tg := s.failedWith(t, "team-a", "daemon")
		if msg := tg.Status.Message; !strings.Contains(msg, "processes[0].user") || !strings.Contains(msg, "--task-users") {
			t.Errorf("message %q", msg)
		}
	})
	t.Run("reading another tenant's process", func(t *testing.T) {
		a.applySpec(t, proc("snoop", `"startCmd":"cat /proc/`+strconv.Itoa(victimPid)+`/environ > ${workPath}/environ.txt 2>&1; cat `+victimWork+`/pw.txt > ${workPath}/file.txt 2>&1; ls /proc/`+strconv.Itoa(victimPid)+`/cwd/ > ${workPath}/cwd.txt 2>&1; echo done > ${workPath}/done; exec sleep 60"`))
		tg := s.running(t, "team-a", "snoop", 1)[0]
		work := filepath.Join(s.dataDir, "agent", "pods", "team-a."+tg.Metadata.Name, "work")
		waitUntil(t, 10*time.Second, "the snoop finished", func() bool { _, err := os.Stat(filepath.Join(work, "done")); return err == nil })
		for _, f := range []string{"environ.txt", "file.txt", "cwd.txt"} {
			if b, _ := os.ReadFile(filepath.Join(work, f)); strings.Contains(string(b), bSecret) || !strings.Contains(string(b), "denied") {
				t.Errorf("team A's %s: %q, want its read of team B's denied", f, b)
			}
		}
	})
	t.Run("container parameters", func(t *testing.T) {
		refused(t, app("params", `"parameters":[{"key":"security-opt","value":"seccomp={\"defaultAction\":\"SCMP_ACT_ALLOW\"}"}]`), "parameters[0]")
		refused(t, app("params", `"parameters":[{"key":"cgroup-parent","value":"/team-b"},{"key":"log-driver","value":"syslog"},{"key":"log-opt","value":"syslog-address=tcp://127.0.0.1:1"},{"key":"oom-score-adj","value":"-1000"},{"key":"ulimit","value":"memlock=-1"}]`),
			"parameters[0]", `"cgroup-parent"`, "parameters[1]", `"log-driver"`, "parameters[2]", "parameters[3]", `"oom-score-adj"`, "parameters[4]", `"ulimit"`)
	})
	t.Run("a dependency of another namespace", func(t *testing.T) {
		refused(t, `{"apiVersion":"v4","kind":"process","metadata":{"name":"leech","namespace":"team-a"},
		"spec":{"instance":1,"template":{"spec":{"dependencies":[{"name":"vault","namespace":"team-b"}],
		"processes":[{"procName":"sleep","startCmd":"exec sleep 60"}]}}}}`, "spec.template.spec.dependencies[0].namespace", "may not read dependency")
	})
	t.Run("notify of every namespace", func(t *testing.T) {
		refused(t, `{"apiVersion":"v4","kind":"notify","metadata":{"name":"all","namespace":"team-a"},"spec":{"url":"`+recv.URL+`","namespaces":["*"]}}`,
			"spec.namespaces[0]")
		a.applySpec(t, `{"apiVersion":"v4","kind":"notify","metadata":{"name":"mine","namespace":"team-a"},"spec":{"url":"`+recv.URL+`"}}`)
	})
	t.Run("secrets and events of another namespace", func(t *testing.T) {
		for _, args := range [][]string{{"get", "secret", "db", "-n", "team-b", "-o", "json"}, {"events", "-n", "team-b"},
			{"get", "processes", "-A"}, {"logs", "-n", "team-b", victim.Metadata.Name},
			{"logs", "-n", "team-b", victim.Metadata.Name, "--stderr", "--timestamps"}} {
			r := a.berth("", args...)
			if r.code == 0 || strings.Contains(r.stdout+r.stderr, bSecret) || !strings.Contains(r.stderr, "may not") {
				t.Errorf("berth %v: %d %s %s", args, r.code, r.stdout, r.stderr)
			}
		}
	})
	t.Run("bodies without credentials", func(t *testing.T) {
		host := strings.TrimPrefix(s.url, "https://")
		c, err := tls.Dial("tcp", host, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /v1/apply HTTP/1.1\r\nHost: %s\r\nContent-Length: 1048576\r\n\r\n", host)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("an unsent body without a token: %v %v, want 401 at once", resp, err)
		}
	})
	t.Run("a join token for an existing node", func(t *testing.T) {
		token := strings.TrimSpace(s.mustBerth("token", "create", "-o", "name"))
		csr, _, err := pki.NewCSR(s.nodeName(t))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(v4.AgentCertificateRequest{NodeName: s.nodeName(t), CSR: string(csr)})
		req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/agent/certificate", strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+strings.SplitN(token, "::", 2)[0])
		resp, err := s.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusConflict || !strings.Contains(string(msg), "another key") {
			t.Fatalf("join as the existing node: %d %s, want 409", resp.StatusCode, msg)
		}
	})

	t.Run("filling the cluster's etcd", func(t *testing.T) {
		status, body := call(t, s.http, http.MethodPut, s.url+"/v1/namespaces/team-a/quota", `{"objects":12}`)
		if status != http.StatusOK {
			t.Fatalf("set team A's limit: %d %s", status, body)
		}
		var last cliResult
		for i := range 20 {
			last = a.berth(`{"apiVersion":"v4","kind":"configmap","metadata":{"name":"fill`+strconv.Itoa(i)+`","namespace":"team-a"},"datas":{"k":{"type":"file","content":"eA=="}}}`, "apply", "-f", "-")
			if last.code != 0 {
				break
			}
		}
		if last.code == 0 || !strings.Contains(last.stderr, "namespace team-a") || !strings.Contains(last.stderr, "limit") {
			t.Fatalf("team A filled its namespace past its limit: %d %s", last.code, last.stderr)
		}
		b.applySpec(t, `{"apiVersion":"v4","kind":"configmap","metadata":{"name":"still","namespace":"team-b"},"datas":{"k":{"type":"file","content":"eA=="}}}`)
	})
	t.Run("taking every connection", func(t *testing.T) {
		// From another source address, as many connections as the server has: one source
		// gets its share (--max-connections-per-source), the others are closed at once,
		// and the administrator still gets in.
		host := strings.TrimPrefix(s.url, "https://")
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 2 * time.Second}
		for range 120 {
			c, err := d.Dial("tcp", host)
			if err != nil {
				continue
			}
			defer c.Close()
		}
		start := time.Now()
		if out := s.mustBerth("get", "processes", "-n", "team-b"); !strings.Contains(out, "vault") {
			t.Fatalf("the administrator's read: %s", out)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("the administrator waited %s", d)
		}
	})
	t.Run("TLS 1.2 without AEAD", func(t *testing.T) {
		host := strings.TrimPrefix(s.url, "https://")
		c, err := tls.Dial("tcp", host, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12,
			CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA}})
		if err == nil {
			c.Close()
			t.Fatal("a CBC-SHA1 suite was accepted")
		}
	})
	t.Run("the audit log names what happened", func(t *testing.T) {
		a.berth("", "get", "processes", "-n", "team-a") // one more line of team A's
		s.as("berth-acl-nope00.0000000000000000000000000000000000000000000").berth("", "get", "processes", "-n", "team-a")
		snoop := a.taskGroups("team-a", "snoop")
		if len(snoop) > 0 {
			a.berth("", "exec", "-n", "team-a", snoop[0].Metadata.Name, "--", "echo", "audited-command")
		}
		waitUntil(t, 20*time.Second, "the audit lines", func() bool {
			b, _ := os.ReadFile(filepath.Join(s.dataDir, "audit.log"))
			log := string(b)
			return strings.Contains(log, `"kind":"process"`) && strings.Contains(log, `"name":"snoop"`) &&
				(len(snoop) == 0 || strings.Contains(log, "audited-command"))
		})
	})

	// Team B's process fails: team A's notify must not hear of it.
	b.mustBerth("exec", "-n", "team-b", victim.Metadata.Name, "--", "kill", "-9", strconv.Itoa(victimPid))
	waitUntil(t, 20*time.Second, "team B's task group to fail", func() bool {
		for _, tg := range s.taskGroups("team-b", "vault") {
			if tg.Status.Phase == v4.StatusFailed || tg.Metadata.Name != victim.Metadata.Name {
				return true
			}
		}
		return false
	})
	time.Sleep(2 * time.Second) // a notify would be on its way by now
	mu.Lock()
	got := notified.String()
	mu.Unlock()
	if strings.Contains(got, "team-b") || strings.Contains(got, bSecret) {
		t.Errorf("team A's notify heard of team B: %s", got)
	}
	if out := a.mustBerth("events", "-n", "team-a"); strings.Contains(out, bSecret) {
		t.Errorf("team A's events hold team B's secret: %s", out)
	}

	if syscall.Kill(bystander.Process.Pid, 0) != nil || zombie(bystander.Process.Pid) {
		t.Error("a process of the host was signalled")
	}
	if after := treeSum(t, canaryTrees...); after != before {
		t.Errorf("the canary tree changed:\n%s", diffSums(before, after))
	}
}

// teamToken makes a policy granting read, write, logs, exec and scale in ns (and read and
// write on its secrets), and a token of it.
func teamToken(t *testing.T, s *devServer, ns string) string {
	t.Helper()
	policy := filepath.Join(t.TempDir(), ns+".yaml")
	doc := "kind: acl-policy\nmetadata: {name: " + ns + "}\nrules:\n  - {namespaces: [" + ns + "], kinds: [\"*\"], verbs: [read, write, logs, exec, scale]}\n" +
		"  - {namespaces: [" + ns + "], kinds: [secret], verbs: [read, write]}\n"
	if err := os.WriteFile(policy, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	s.mustBerth("acl", "policy", "apply", "-f", policy)
	return strings.TrimSpace(s.mustBerth("acl", "token", "create", "--policy", ns, "--name", ns, "-o", "name"))
}

// nodeName is the name of the dev cluster's node.
func (s *devServer) nodeName(t *testing.T) string {
	t.Helper()
	out := s.mustBerth("nodes", "-o", "name")
	name := strings.TrimSpace(strings.SplitN(strings.TrimSpace(out), "\n", 2)[0])
	return strings.TrimPrefix(name, "node/")
}

// treeSum is one line per file of the trees: path, mode, owner, size and the SHA-256 of
// its content (of its target for a link).
func treeSum(t *testing.T, roots ...string) string {
	t.Helper()
	var lines []string
	for _, root := range roots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			fi, err := os.Lstat(p)
			if err != nil {
				return nil
			}
			st := fi.Sys().(*syscall.Stat_t)
			sum := ""
			switch {
			case fi.Mode()&fs.ModeSymlink != 0:
				sum, _ = os.Readlink(p)
			case fi.Mode().IsRegular():
				if b, err := os.ReadFile(p); err == nil {
					h := sha256.Sum256(b)
					sum = hex.EncodeToString(h[:8])
				}
			}
			lines = append(lines, fmt.Sprintf("%s %v %d:%d %s", p, fi.Mode(), st.Uid, st.Gid, sum))
			return nil
		})
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// diffSums lists the lines of two tree sums that differ.
func diffSums(a, b string) string {
	in := map[string]bool{}
	for l := range strings.SplitSeq(a, "\n") {
		in[l] = true
	}
	var out []string
	for l := range strings.SplitSeq(b, "\n") {
		if !in[l] {
			out = append(out, "+ "+l)
		}
		delete(in, l)
	}
	for l := range in {
		out = append(out, "- "+l)
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
