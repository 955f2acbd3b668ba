package server

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// fakeAgent serves the agent's routes: logs stream two lines, wait, then a third; the
// actions answer 204, or 404 for an unknown task.
type fakeAgent struct {
	mu       sync.Mutex
	requests []string
	release  chan struct{}
}

func (f *fakeAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Authorization"))
	f.mu.Unlock()
	switch {
	case r.Header.Get("Authorization") != "Bearer "+testToken:
		http.Error(w, "no", http.StatusUnauthorized)
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
	default:
		http.NotFound(w, r)
	}
}

func TestTaskGroupLogsAndActionsProxy(t *testing.T) {
	fa := &fakeAgent{release: make(chan struct{})}
	agentSrv := httptest.NewServer(fa)
	t.Cleanup(agentSrv.Close)
	url := newTestServer(t, Config{JoinToken: testToken})
	addr := strings.TrimPrefix(agentSrv.URL, "http://")
	node := strings.Replace(nodeJSON("n1", ""), `"status":{"phase":"Ready"}`, `"status":{"phase":"Ready","agentAddress":"`+addr+`"}`, 1)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/nodes", node), http.StatusCreated)
	putTaskGroup(t, "ns", "0.web.ns.c.1", "n1", nil)
	logs := url + "/v1/namespaces/ns/taskgroups/0.web.ns.c.1/logs"

	r := call(t, http.MethodGet, logs+"?task=web&tail=5", "")
	if r.code != http.StatusOK || string(r.body) != "line 1\nline 2\n" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("logs: %d %q %v", r.code, r.body, r.header)
	}
	fa.mu.Lock()
	if got := fa.requests[0]; got != "GET /v1/taskgroups/ns/0.web.ns.c.1/logs?tail=5&task=web Bearer "+testToken {
		t.Errorf("agent got %q", got)
	}
	fa.mu.Unlock()

	// follow=true streams: the first lines arrive before the agent writes the third.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, logs+"?follow=true", nil)
	resp, err := http.DefaultClient.Do(req)
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
	patch := `{"status":{"agentAddress":"` + dead + `"}}`
	wantStatus(t, call(t, http.MethodPatch, url+"/v1/nodes/n1", patch), http.StatusOK)
	r = call(t, http.MethodGet, logs, "")
	wantStatus(t, r, http.StatusBadGateway)
	if !strings.Contains(decodeError(t, r).Message, "cannot reach the agent") {
		t.Fatalf("502 message: %s", r.body)
	}
	putTaskGroup(t, "ns", "2.web.ns.c.1", "n9", nil)
	wantStatus(t, call(t, http.MethodGet, url+"/v1/namespaces/ns/taskgroups/2.web.ns.c.1/logs", ""), http.StatusBadGateway)
}

func TestTaskGroupLogsWithoutToken(t *testing.T) {
	url := newTestServer(t, Config{})
	putTaskGroup(t, "ns", "0.web.ns.c.1", "n1", func(tg *v4.TaskGroup) {})
	wantStatus(t, call(t, http.MethodGet, url+"/v1/namespaces/ns/taskgroups/0.web.ns.c.1/logs", ""), http.StatusServiceUnavailable)
}
