package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/pki"
	"github.com/berthhq/berth/internal/scheduler"
)

// fakeAgent serves the agent's routes: logs stream two lines, wait, then a third; the
// actions answer 204, or 404 for an unknown task.
type fakeAgent struct {
	mu       sync.Mutex
	requests []string
	release  chan struct{}
}

func (f *fakeAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	who := "anonymous"
	if c := httpapi.PeerCert(r.TLS); c != nil && pki.IsServer(c) {
		who = "server"
	}
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.RequestURI()+" "+who+" "+r.Header.Get("Authorization"))
	f.mu.Unlock()
	switch {
	case who != "server":
		http.Error(w, "no", http.StatusForbidden)
	case r.URL.Query().Get("task") == "nope":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"code":404,"reason":"NotFound","message":"task nope not found"}}`)
	case strings.HasSuffix(r.URL.Path, "/logs"):
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "line 1\nline 2\n")
		http.NewResponseController(w).Flush()
		if r.URL.Query().Get("follow") == "true" {
			select {
			case <-f.release:
			case <-r.Context().Done():
				return
			}
			fmt.Fprint(w, "line 3\n")
		}
	case strings.Contains(r.URL.Path, "/actions/"):
		w.WriteHeader(http.StatusNoContent)
	case r.URL.Path == "/v1/node/usage":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"time":"2026-11-29T00:00:00Z","node":"n1","windowSeconds":2,
			"host":{"cpuCores":1.25,"cpuSeconds":900,"memoryBytes":2147483648,"memoryTotalBytes":8589934592},
			"instances":{"count":1,"tasks":1,"cpuCores":0.5,"memoryBytes":1048576}}`)
	case strings.HasSuffix(r.URL.Path, "/usage"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"time":"2026-11-29T00:00:00Z","node":"n1","tasks":[{"name":"web","cpuSeconds":1.5,"memoryBytes":1048576}]}`)
	default:
		http.NotFound(w, r)
	}
}

// serveFakeAgent serves fa over TLS with a certificate of ca naming node, asking for the
// client's certificate as a real agent does.
func serveFakeAgent(t *testing.T, fa http.Handler, ca *pki.CA, node string) string {
	t.Helper()
	cert := nodeCertificate(t, ca, node)
	ts := httptest.NewUnstartedServer(fa)
	ts.Listener = tls.NewListener(ts.Listener, &tls.Config{Certificates: []tls.Certificate{cert},
		ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: testCA(t).Pool()})
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.Listener.Addr().String()
}

// heartbeatAt has node's agent say it serves at addr.
func heartbeatAt(t *testing.T, url, node, addr string) {
	t.Helper()
	wantStatus(t, callAs(t, node, http.MethodPut, url+"/v1/agent/nodes/"+node+"/heartbeat", `{"agentAddress":"`+addr+`"}`, ""), http.StatusNoContent)
}

func TestTaskGroupLogsAndActionsProxy(t *testing.T) {
	fa := &fakeAgent{release: make(chan struct{})}
	addr := serveFakeAgent(t, fa, testCA(t), "n1")
	url := newTestServer(t, Config{})
	wantStatus(t, agentCall(t, http.MethodPost, url+"/v1/agent/register", nodeJSON("n1", "")), http.StatusCreated)
	heartbeatAt(t, url, "n1", addr)
	putTaskGroup(t, "ns", "0.web.ns.c.1", "n1", nil)
	logs := url + "/v1/namespaces/ns/taskgroups/0.web.ns.c.1/logs"

	r := call(t, http.MethodGet, logs+"?task=web&tail=5", "")
	if r.code != http.StatusOK || string(r.body) != "line 1\nline 2\n" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("logs: %d %q %v", r.code, r.body, r.header)
	}
	fa.mu.Lock()
	// The server presents its own certificate and no token: never the user's credentials.
	if got := fa.requests[0]; got != "GET /v1/taskgroups/ns/0.web.ns.c.1/logs?tail=5&task=web server " {
		t.Errorf("agent got %q", got)
	}
	fa.mu.Unlock()

	// stream and timestamps are checked, naming the parameter, and forwarded; a bad one
	// reaches no agent. A token of another namespace reads no stream of this one.
	fa.mu.Lock()
	before := len(fa.requests)
	fa.mu.Unlock()
	for _, q := range []string{"stream=both", "timestamps=yes", "tail=-3", "tail=x"} {
		name, _, _ := strings.Cut(q, "=")
		r := call(t, http.MethodGet, logs+"?"+q, "")
		wantStatus(t, r, http.StatusBadRequest)
		if e := decodeError(t, r); !strings.Contains(e.Message, name) {
			t.Errorf("%s: %q does not name %s", q, e.Message, name)
		}
	}
	other := tokenWithPolicy(t, url, `{"kind":"acl-policy","metadata":{"name":"other-logs"},"rules":[{"namespaces":["other"],"kinds":["*"],"verbs":["*"]}]}`, "other-logs", "")
	wantStatus(t, callAs(t, "", http.MethodGet, logs+"?stream=stderr&timestamps=true", "", other), http.StatusForbidden)
	fa.mu.Lock()
	if len(fa.requests) != before {
		t.Errorf("refused requests reached the agent: %v", fa.requests[before:])
	}
	fa.mu.Unlock()
	wantStatus(t, call(t, http.MethodGet, logs+"?task=web&stream=stderr&timestamps=true", ""), http.StatusOK)
	fa.mu.Lock()
	if got := fa.requests[len(fa.requests)-1]; got != "GET /v1/taskgroups/ns/0.web.ns.c.1/logs?stream=stderr&task=web&timestamps=true server " {
		t.Errorf("agent got %q", got)
	}
	fa.mu.Unlock()

	// follow=true streams: the first lines arrive before the agent writes the third.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, logs+"?follow=true", nil)
	resp, err := httpClientAs(t, "").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	for _, want := range []string{"line 1\n", "line 2\n"} {
		if line, err := rd.ReadString('\n'); line != want || err != nil {
			t.Fatalf("streamed %q, %v; want %q", line, err, want)
		}
	}
	close(fa.release)
	if line, err := rd.ReadString('\n'); line != "line 3\n" || err != nil {
		t.Fatalf("streamed %q, %v after release", line, err)
	}

	// The agent's errors pass through; actions are forwarded.
	wantStatus(t, call(t, http.MethodGet, logs+"?task=nope", ""), http.StatusNotFound)
	r = call(t, http.MethodPost, url+"/v1/namespaces/ns/taskgroups/0.web.ns.c.1/actions/reload?task=web", "")
	if r.code != http.StatusNoContent {
		t.Fatalf("action: %d %s", r.code, r.body)
	}
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/ns/taskgroups/0.web.ns.c.1/actions/explode", ""), http.StatusNotFound)
	wantStatus(t, call(t, http.MethodGet, url+"/v1/namespaces/ns/taskgroups/nope/logs", ""), http.StatusNotFound)

	// No node yet: 409. An agent that does not answer: 502 saying so.
	putTaskGroup(t, "ns", "1.web.ns.c.1", "", nil)
	wantStatus(t, call(t, http.MethodGet, url+"/v1/namespaces/ns/taskgroups/1.web.ns.c.1/logs", ""), http.StatusConflict)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	heartbeatAt(t, url, "n1", dead)
	r = call(t, http.MethodGet, logs, "")
	wantStatus(t, r, http.StatusBadGateway)
	if !strings.Contains(decodeError(t, r).Message, "cannot reach the agent") {
		t.Fatalf("502 message: %s", r.body)
	}
	putTaskGroup(t, "ns", "2.web.ns.c.1", "n9", nil)
	wantStatus(t, call(t, http.MethodGet, url+"/v1/namespaces/ns/taskgroups/2.web.ns.c.1/logs", ""), http.StatusBadGateway)
}

// withFakeAgentNode serves a fake agent for node n1, registered and heartbeating to a
// new server, with task group ns/0.web.ns.c.1 bound to it; it returns both.
func withFakeAgentNode(t *testing.T) (*fakeAgent, string) {
	t.Helper()
	fa := &fakeAgent{}
	addr := serveFakeAgent(t, fa, testCA(t), "n1")
	url := newTestServer(t, Config{})
	wantStatus(t, agentCall(t, http.MethodPost, url+"/v1/agent/register", nodeJSON("n1", "")), http.StatusCreated)
	heartbeatAt(t, url, "n1", addr)
	putTaskGroup(t, "ns", "0.web.ns.c.1", "n1", nil)
	return fa, url
}

// A task group's usage is read from its agent; reading it is a read right in its
// namespace, which a token of another namespace does not have.
func TestTaskGroupUsageProxy(t *testing.T) {
	fa, url := withFakeAgentNode(t)
	usage := url + "/v1/namespaces/ns/taskgroups/0.web.ns.c.1/usage"
	r := call(t, http.MethodGet, usage, "")
	var u v4.TaskGroupUsage
	if r.code != http.StatusOK || json.Unmarshal(r.body, &u) != nil || u.Node != "n1" || len(u.Tasks) != 1 || u.Tasks[0].CPUSeconds != 1.5 {
		t.Fatalf("usage: %d %s", r.code, r.body)
	}
	fa.mu.Lock()
	if got := fa.requests[0]; got != "GET /v1/taskgroups/ns/0.web.ns.c.1/usage server " {
		t.Errorf("agent got %q", got)
	}
	fa.mu.Unlock()
	other := tokenWithPolicy(t, url, `{"kind":"acl-policy","metadata":{"name":"other"},"rules":[{"namespaces":["other"],"kinds":["*"],"verbs":["read"]}]}`, "other", "")
	wantStatus(t, callAs(t, "", http.MethodGet, usage, "", other), http.StatusForbidden)
	wantStatus(t, call(t, http.MethodGet, url+"/v1/namespaces/ns/taskgroups/nope/usage", ""), http.StatusNotFound)
}

// A node's usage is read from its agent and the server adds what berth may hand out and
// what the node's task groups reserve; nodes are the cluster's, which a token of one
// namespace may not read.
func TestNodeUsageProxy(t *testing.T) {
	fa, url := withFakeAgentNode(t)
	usage := url + "/v1/nodes/n1/usage"
	var u v4.NodeUsage
	waitFor(t, "the node's usage with its task group reserved", func() bool {
		r := call(t, http.MethodGet, usage, "")
		if r.code != http.StatusOK || json.Unmarshal(r.body, &u) != nil {
			t.Fatalf("usage: %d %s", r.code, r.body)
		}
		return u.Reserved.TaskGroups == 1
	})
	if u.Node != "n1" || u.Host.CPUCores != 1.25 || u.Host.MemoryBytes != 2<<30 || u.Instances.CPUCores != 0.5 ||
		u.Instances.MemoryBytes != 1<<20 || u.Allocatable.CPU <= 0 || u.Allocatable.MemoryMB <= 0 {
		t.Fatalf("usage %+v", u)
	}
	// The executor's part of what the task group reserves is told apart.
	if u.Reserved.OverheadMemoryMB != scheduler.DefaultOverhead.MemoryMB || u.Reserved.OverheadCPU != scheduler.DefaultOverhead.CPU {
		t.Errorf("reserved %+v, want the overhead of one task group", u.Reserved)
	}
	fa.mu.Lock()
	if got := fa.requests[0]; got != "GET /v1/node/usage server " {
		t.Errorf("agent got %q", got)
	}
	fa.mu.Unlock()
	wantStatus(t, call(t, http.MethodGet, url+"/v1/nodes/nope/usage", ""), http.StatusNotFound)
	other := tokenWithPolicy(t, url, `{"kind":"acl-policy","metadata":{"name":"other"},"rules":[{"namespaces":["other"],"kinds":["*"],"verbs":["read"]}]}`, "other", "")
	wantStatus(t, callAs(t, "", http.MethodGet, usage, "", other), http.StatusForbidden)
	wantStatus(t, callAs(t, "", http.MethodGet, url+"/v1/nodes/nope/usage", "", other), http.StatusForbidden)
}

func TestTaskGroupLogsWithoutAgentAddress(t *testing.T) {
	url := newTestServer(t, Config{})
	wantStatus(t, agentCall(t, http.MethodPost, url+"/v1/agent/register", nodeJSON("n1", "")), http.StatusCreated)
	putTaskGroup(t, "ns", "0.web.ns.c.1", "n1", func(tg *v4.TaskGroup) {})
	r := call(t, http.MethodGet, url+"/v1/namespaces/ns/taskgroups/0.web.ns.c.1/logs", "")
	wantStatus(t, r, http.StatusBadGateway)
	if !strings.Contains(decodeError(t, r).Message, "has not said where it serves") {
		t.Fatalf("502 message: %s", r.body)
	}
}

// The server reaches a node's agent only: a user cannot point the node elsewhere, and
// whatever answers at the node's address must hold that node's certificate from the
// cluster CA, or the server sends it nothing.
func TestAgentProxyVerifiesTheAgent(t *testing.T) {
	url := newTestServer(t, Config{})
	wantStatus(t, agentCall(t, http.MethodPost, url+"/v1/agent/register", nodeJSON("n1", "")), http.StatusCreated)
	putTaskGroup(t, "ns", "0.web.ns.c.1", "n1", nil)
	logs := url + "/v1/namespaces/ns/taskgroups/0.web.ns.c.1/logs"

	impostor := &fakeAgent{release: make(chan struct{})}
	other, err := pki.NewCA("another CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, addr, want string
	}{
		{"another node's agent", serveFakeAgent(t, impostor, testCA(t), "n2"), `for "n2", not node n1's agent`},
		{"a certificate of another CA", serveFakeAgent(t, impostor, other, "n1"), "not from this cluster's CA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A user's patch or replacement of the address is refused, naming the field.
			for _, method := range []string{http.MethodPatch, http.MethodPut} {
				body := `{"status":{"agentAddress":"` + tc.addr + `"}}`
				if method == http.MethodPut {
					body = strings.Replace(nodeJSON("n1", ""), `"status":{"phase":"Ready"}`, `"status":{"phase":"Ready","agentAddress":"`+tc.addr+`"}`, 1)
				}
				r := call(t, method, url+"/v1/nodes/n1", body)
				wantStatus(t, r, http.StatusForbidden)
				if e := decodeError(t, r); len(e.Details) != 1 || e.Details[0].Field != "status.agentAddress" {
					t.Fatalf("%s: details %+v", method, e.Details)
				}
			}
			// Even with the address pointing there, the server refuses the other end.
			heartbeatAt(t, url, "n1", tc.addr)
			r := call(t, http.MethodGet, logs, "")
			wantStatus(t, r, http.StatusBadGateway)
			if !strings.Contains(decodeError(t, r).Message, tc.want) {
				t.Fatalf("502 message %s, want %q", r.body, tc.want)
			}
		})
	}
	impostor.mu.Lock()
	defer impostor.mu.Unlock()
	if len(impostor.requests) != 0 {
		t.Fatalf("the impostor received %q", impostor.requests)
	}
}
