package server

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/pki"
)

// h2Client is an HTTP/2 client of the test server, as an agent's is
// (client.MultiplexedHTTPClient): a node's when node is set, else a user's with the
// management token. It opens one connection at most, so what it does shows what one
// connection may do.
func h2Client(t *testing.T, node string) *http.Client {
	t.Helper()
	var getCert func(*tls.CertificateRequestInfo) (*tls.Certificate, error)
	if node != "" {
		cert := nodeCertificate(t, testCA(t), node)
		getCert = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	hc := client.MultiplexedHTTPClient(pki.Hardened(&tls.Config{RootCAs: roots, GetClientCertificate: getCert}))
	tr := hc.Transport.(*http.Transport)
	tr.MaxConnsPerHost = 1
	t.Cleanup(tr.CloseIdleConnections)
	if node == "" {
		hc.Transport = &adminTransport{next: tr}
	}
	return hc
}

// connectionsOpened is the server's count of the connections it accepted.
func connectionsOpened(t *testing.T, srv *Server) int {
	t.Helper()
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

// An agent's heartbeat stream, task group watch, status writes and reports are streams
// of one HTTP/2 connection: the server holds one connection per node.
func TestAgentStreamsShareOneHTTP2Connection(t *testing.T) {
	srv, url := newTestServerOf(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wantStatus(t, call(t, http.MethodPost, url+"/v1/nodes", nodeJSON("n1", "")), http.StatusCreated)
	putTaskGroup(t, "ns", "0.web.ns.c.1", "n1", nil)
	before := connectionsOpened(t, srv)
	c, err := client.New(url, client.WithHTTPClient(h2Client(t, "n1")))
	if err != nil {
		t.Fatal(err)
	}
	beats, err := c.AgentHeartbeats(ctx, "n1")
	if err != nil {
		t.Fatal(err)
	}
	defer beats.Close()
	if err := beats.BeatAndWait(ctx, v4.AgentHeartbeat{}); err != nil {
		t.Fatal(err)
	}
	_, rv, err := c.AgentTaskGroups(ctx, "n1")
	if err != nil {
		t.Fatal(err)
	}
	events, err := c.AgentWatchTaskGroups(ctx, "n1", rv)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AgentPutStatus(ctx, "ns", "0.web.ns.c.1", v4.TaskGroupStatus{Phase: v4.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	select { // the watch tells the agent of the status it wrote
	case ev, ok := <-events:
		if !ok || ev.Err != nil {
			t.Fatalf("the watch ended: %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event in 10 s")
	}
	if _, err := c.AgentReport(ctx, "n1", v4.AgentReport{TaskGroups: []v4.TaskGroupReport{
		{Namespace: "ns", Name: "0.web.ns.c.1", Status: v4.TaskGroupStatus{Phase: v4.StatusRunning}},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := beats.Beat(v4.AgentHeartbeat{}); err != nil {
		t.Fatalf("the heartbeat stream after the other calls: %v", err)
	}
	if n := connectionsOpened(t, srv) - before; n != 1 {
		t.Fatalf("%d connections for a heartbeat stream, a watch and calls, want 1", n)
	}
}

// A source's requests in flight are counted per request, not per connection: 64 held
// on one HTTP/2 connection leave the 65th a 429, on the same connection.
func TestSourceRequestLimitOverHTTP2(t *testing.T) {
	srv, url := newTestServerOf(t, Config{})
	hc := h2Client(t, "")
	before := connectionsOpened(t, srv)
	var wg sync.WaitGroup
	var bodies []*io.PipeWriter
	defer func() {
		for _, b := range bodies {
			b.CloseWithError(io.ErrUnexpectedEOF)
		}
		wg.Wait()
	}()
	for range sourceRequests {
		pr, pw := io.Pipe()
		bodies = append(bodies, pw)
		req, err := http.NewRequest(http.MethodPost, url+"/v1/apply", pr)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = 1 << 20
		wg.Add(1)
		go func() { // held reading its body until the test ends
			defer wg.Done()
			if resp, err := hc.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	get := func() int {
		resp, err := hc.Get(url + "/v1/namespaces/ns/applications")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	waitFor(t, "every held request to be counted", func() bool { return get() == http.StatusTooManyRequests })
	if n := connectionsOpened(t, srv) - before; n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
	for _, b := range bodies {
		b.CloseWithError(io.ErrUnexpectedEOF)
	}
	bodies = nil
	waitFor(t, "the source's share to be free again", func() bool { return get() == http.StatusOK })
}

// A body that trickles in over an HTTP/2 stream is cut as over HTTP/1.1: 408.
func TestSlowBodyIsCutOverHTTP2(t *testing.T) {
	url := newTestServer(t, Config{bodyGrace: 500 * time.Millisecond})
	hc := h2Client(t, "")
	pr, pw := io.Pipe()
	done := make(chan struct{})
	defer func() { pw.Close(); <-done }()
	go func() {
		defer close(done)
		for range 50 {
			if _, err := pw.Write([]byte(" ")); err != nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	req, err := http.NewRequest(http.MethodPost, url+"/v1/apply", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = 1 << 20
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("a slow body: %s %s, want HTTP/2 and 408", resp.Proto, resp.Status)
	}
	if b, _ := io.ReadAll(resp.Body); !strings.Contains(string(b), "Timeout") {
		t.Errorf("408: %s", b)
	}
}
