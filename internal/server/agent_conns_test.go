package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// An agent's calls reuse its connection: each new one costs the server a TLS handshake,
// which at thousands of agents in a burst of status reports was most of its CPU.
func TestAgentCallsReuseTheirConnection(t *testing.T) {
	srv, url := newTestServerOf(t, Config{})
	ctx := context.Background()
	wantStatus(t, call(t, http.MethodPost, url+"/v1/nodes", nodeJSON("n1", "")), http.StatusCreated)
	putTaskGroup(t, "ns", "0.web.ns.c.1", "n1", nil)
	// A transport of its own, as an agent has: the test clients' are shared.
	hc := *httpClientAs(t, "n1")
	hc.Transport = hc.Transport.(*http.Transport).Clone()
	c, err := client.New(url, client.WithHTTPClient(&hc))
	if err != nil {
		t.Fatal(err)
	}
	opened := func() int {
		rec := httptest.NewRecorder()
		srv.Metrics().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		m := regexp.MustCompile(`(?m)^berth_http_connections_opened_total (\S+)`).FindSubmatch(rec.Body.Bytes())
		if m == nil {
			t.Fatal("no berth_http_connections_opened_total")
		}
		n, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			t.Fatal(err)
		}
		return int(n)
	}
	if _, _, err := c.AgentTaskGroups(ctx, "n1"); err != nil { // the connection for calls
		t.Fatal(err)
	}
	before := opened()
	calls := []struct {
		name string
		call func() error
	}{
		{"list task groups", func() error { _, _, err := c.AgentTaskGroups(ctx, "n1"); return err }},
		{"status", func() error {
			return c.AgentPutStatus(ctx, "ns", "0.web.ns.c.1", v4.TaskGroupStatus{Phase: v4.StatusRunning})
		}},
		{"report", func() error {
			_, err := c.AgentReport(ctx, "n1", v4.AgentReport{TaskGroups: []v4.TaskGroupReport{
				{Namespace: "ns", Name: "0.web.ns.c.1", Status: v4.TaskGroupStatus{Phase: v4.StatusRunning}},
				{Namespace: "ns", Name: "9.gone.ns.c.1", Status: v4.TaskGroupStatus{Phase: v4.StatusRunning}},
			}})
			return err
		}},
		{"heartbeat", func() error { return c.AgentHeartbeat(ctx, "n1", v4.AgentHeartbeat{}) }},
		{"a status the server refuses", func() error {
			if err := c.AgentPutStatus(ctx, "ns", "9.gone.ns.c.1", v4.TaskGroupStatus{Phase: v4.StatusRunning}); !client.IsNotFound(err) {
				t.Errorf("status of an unknown task group: %v", err)
			}
			return nil
		}},
	}
	for _, tc := range calls {
		for range 3 {
			if err := tc.call(); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		if n := opened() - before; n != 0 {
			t.Fatalf("%s: %d connections opened for 3 calls on an idle connection", tc.name, n)
		}
	}
	// A watch holds a connection while it lasts; once it ended, the next one may reuse it.
	for range 3 {
		wctx, cancel := context.WithCancel(ctx)
		ch, err := c.AgentWatchTaskGroups(wctx, "n1", "")
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		for range ch {
		}
	}
	time.Sleep(100 * time.Millisecond)
	if n := opened() - before; n > 3 {
		t.Fatalf("%d connections opened for 3 watches", n)
	}
}
