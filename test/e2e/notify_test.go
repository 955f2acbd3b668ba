package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// callbackServer is the receiving end of notify callbacks: it fails the first requests
// with 500 (failFirst of them), then answers 200 and keeps what it got.
type callbackServer struct {
	*httptest.Server
	mu        sync.Mutex
	failFirst int
	requests  int
	got       []v4.NotifyMessage
}

func newCallbackServer(t *testing.T, failFirst int) *callbackServer {
	t.Helper()
	cb := &callbackServer{failFirst: failFirst}
	cb.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m v4.NotifyMessage
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&m) != nil {
			http.Error(w, "want a POSTed notify message", http.StatusBadRequest)
			return
		}
		cb.mu.Lock()
		defer cb.mu.Unlock()
		cb.requests++
		if cb.requests <= cb.failFirst {
			http.Error(w, "not now", http.StatusInternalServerError)
			return
		}
		cb.got = append(cb.got, m)
	}))
	t.Cleanup(cb.Close)
	return cb
}

// find returns the first message of type typ matching ok.
func (cb *callbackServer) find(typ string, ok func(v4.NotifyMessage) bool) (v4.NotifyMessage, bool) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	for _, m := range cb.got {
		if m.Type == typ && ok(m) {
			return m, true
		}
	}
	return v4.NotifyMessage{}, false
}

func (cb *callbackServer) summary() string {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests, %d delivered:", cb.requests, len(cb.got))
	for _, m := range cb.got {
		fmt.Fprintf(&b, "\n  %s %s/%s %s %s", m.Type, m.Namespace, m.Name, m.TaskGroup, m.Node)
	}
	return b.String()
}

// waitCallback waits for a callback of type typ about owner (or the node, for node
// events) and returns it.
func (cb *callbackServer) waitCallback(t *testing.T, limit time.Duration, typ, owner string) v4.NotifyMessage {
	t.Helper()
	var got v4.NotifyMessage
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if m, ok := cb.find(typ, func(m v4.NotifyMessage) bool { return m.Name == owner }); ok {
			return m
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no %s callback about %s within %s; %s", typ, owner, limit, cb.summary())
	return got
}

// Notify callbacks arrive for a crash loop (taskgroup.failed, then taskgroup.restartStorm)
// and for node loss (node.lost, and taskgroup.lost for what ran there). The callback
// fails the first two requests: the delivery is retried, and each failed attempt is a
// NotifyFailed event in `berth events`.
func TestNotifyCallbacksForCrashLoopAndNodeLoss(t *testing.T) {
	requireRoot(t)
	const ttl = 2 * time.Second
	s := startServer(t, t.TempDir(), "--node-ttl", ttl.String())
	pkgs := packageServer(t)
	cb := newCallbackServer(t, 2)
	agent := startAgent(t, s, "notify-a", "23000-23099")
	const ns = "notify"
	s.cleanupProcesses(ns)

	// Bad input names the field and creates nothing.
	bad := s.berth(`{"apiVersion":"v4","kind":"notify","metadata":{"name":"hooks","namespace":"notify"},
		"spec":{"url":"ftp://example.test/x","events":["taskgroup.crashed"]}}`, "apply", "-f", "-")
	if bad.code == 0 || !strings.Contains(bad.stderr, "spec.url") || !strings.Contains(bad.stderr, "spec.events[0]") {
		t.Fatalf("a bad notify must be refused naming its fields: %d %s%s", bad.code, bad.stdout, bad.stderr)
	}
	s.applySpec(t, fmtSpec(`{"apiVersion":"v4","kind":"notify","metadata":{"name":"hooks","namespace":%q},
		"spec":{"url":%q,"timeoutSeconds":5,"headers":{"X-Test":"notify"}}}`, ns, cb.URL+"/berth"))
	if out := s.mustBerth("get", "notifies", "-n", ns); !strings.Contains(out, "hooks") {
		t.Fatalf("get notifies:\n%s", out)
	}

	uri := pkgs.URL + "/web-demo.tar.gz"
	s.applySpec(t, webSpec{name: "steady", ns: ns, instances: 1, uri: uri, user: "deploy", pwd: "s3cret"}.json())
	s.running(t, ns, "steady", 1)

	// (a) A process that exits at once, restarted at once: a crash loop.
	crash := webSpec{name: "crashy", ns: ns, instances: 1, uri: uri, user: "deploy", pwd: "s3cret",
		restart: `{"policy":"Always","interval":0}`, noPidFile: true, startCmd: "exit 3"}
	s.applySpec(t, strings.Replace(crash.json(), `"procName":"web-demo"`, `"procName":"sh"`, 1))
	failed := cb.waitCallback(t, 60*time.Second, v4.NotifyTaskGroupFailed, "crashy")
	if failed.Namespace != ns || failed.Kind != v4.KindProcess || failed.TaskGroup == "" || failed.Node != "notify-a" ||
		failed.Level != v4.EventWarning || failed.Reason != "InstanceFailed" || failed.ID == "" || failed.Time.IsZero() {
		t.Errorf("taskgroup.failed callback %+v", failed)
	}
	storm := cb.waitCallback(t, 90*time.Second, v4.NotifyTaskGroupRestartStorm, "crashy")
	if storm.Reason != "RestartStorm" || !strings.Contains(storm.Message, "restarted 4 times") {
		t.Errorf("taskgroup.restartStorm callback %+v", storm)
	}

	// (b) The first two attempts got 500: retried, and visible as NotifyFailed events.
	events := s.eventsSay("retrying in", "-n", ns, "--for", "notify/hooks")
	if strings.Count(events, "NotifyFailed") < 2 || !strings.Contains(events, "HTTP 500") || !strings.Contains(events, "retrying in") {
		t.Errorf("berth events does not show the failed attempts:\n%s", events)
	}
	var n v4.Notify
	if err := json.Unmarshal([]byte(s.mustBerth("get", "notify", "hooks", "-n", ns, "-o", "json")), &n); err != nil {
		t.Fatal(err)
	}
	if n.Status.Delivered < 2 || n.Status.LastDelivery == nil {
		t.Errorf("notify status %+v", n.Status)
	}
	s.mustBerth("delete", "process", "crashy", "-n", ns)

	// (c) The agent stops answering (SIGSTOP): its node is lost, and steady with it.
	if err := agent.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer agent.cmd.Process.Signal(syscall.SIGCONT)
	stopped := time.Now()
	lost := cb.waitCallback(t, ttl+20*time.Second, v4.NotifyNodeLost, "notify-a")
	if lost.Kind != v4.KindNode || lost.Node != "notify-a" || lost.Namespace != "" || lost.Reason != "NodeLost" {
		t.Errorf("node.lost callback %+v", lost)
	}
	t.Logf("node.lost callback %s after SIGSTOP (ttl %s)", time.Since(stopped).Round(100*time.Millisecond), ttl)
	if tgLost := cb.waitCallback(t, 20*time.Second, v4.NotifyTaskGroupLost, "steady"); tgLost.Node != "notify-a" {
		t.Errorf("taskgroup.lost callback %+v", tgLost)
	}
	if err := agent.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}
