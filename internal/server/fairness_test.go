package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/jointoken"
	"github.com/berthhq/berth/internal/pki"
	"github.com/prometheus/client_golang/prometheus"
)

// fairRequest is a request of a node (org pki.OrgNodes), a server (pki.OrgServers) or,
// with org "", a user's token.
func fairRequest(method, path, org, name string) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	if org == "" {
		r.Header.Set("Authorization", "Bearer "+name)
		return r
	}
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: name, Organization: []string{org}}}
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}, VerifiedChains: [][]*x509.Certificate{{cert}}}
	return r
}

// eventually waits, a bounded number of times, for cond (a synchronization, not a
// timing assertion).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 5000 {
		if cond() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("never: %s", what)
}

// blockingHandler signals each request it starts on entered and holds it until release
// is closed; a long-lived request's answer starts (header and flush) first.
func blockingHandler(entered chan<- string, release <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if longRunning(r) {
			w.WriteHeader(http.StatusOK)
			http.NewResponseController(w).Flush()
		}
		entered <- r.URL.Path
		<-release
	})
}

// blockedGate serves through g's handler with blockingHandler: requests that enter
// report their path on entered and wait until the test ends, when they are all released
// and awaited.
type blockedGate struct {
	entered chan string
	h       http.Handler
	wg      *sync.WaitGroup
}

func newBlockedGate(t *testing.T, g *fairGate) blockedGate {
	entered, release := make(chan string, 10), make(chan struct{})
	b := blockedGate{entered: entered, h: g.handler(blockingHandler(entered, release)), wg: &sync.WaitGroup{}}
	t.Cleanup(func() { close(release); b.wg.Wait() })
	return b
}

// serve serves r and returns its answer.
func (b blockedGate) serve(r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, r)
	return rec
}

func TestFairClassifies(t *testing.T) {
	g := newFairGate(APISeats{})
	for _, c := range []struct {
		r    *http.Request
		want seatClass
	}{
		{fairRequest("GET", "/v1/agent/catalog", pki.OrgNodes, "n1"), classAgents},
		{fairRequest("GET", "/v1/namespaces", pki.OrgServers, "s1"), classServers},
		{fairRequest("GET", "/v1/namespaces", pki.OrgUsers, "berth-acl-x"), classUsers},
		{fairRequest("GET", "/v1/namespaces", "", "secret-token"), classUsers},
		{httptest.NewRequest("GET", "/v1/namespaces", nil), classUsers},
	} {
		class, flow := g.classify(c.r)
		if class != c.want {
			t.Errorf("%v: class %s, want %s", c.r.TLS != nil, class, c.want)
		}
		if strings.Contains(flow, "secret-token") {
			t.Errorf("the flow %q holds the token", flow)
		}
	}
	g.knownCredential = func(string) bool { return true }
	_, a := g.classify(fairRequest("GET", "/", "", "token-a"))
	_, b := g.classify(fairRequest("GET", "/", "", "token-b"))
	if a == b {
		t.Errorf("two known tokens share the flow %q", a)
	}
}

// Tokens the server does not know (made up, each request another) queue with their
// source as one flow: they cannot give one client a queue, and a turn, per request.
func TestFairUnknownTokensQueueWithTheirSource(t *testing.T) {
	g := newFairGate(APISeats{Users: 1, Wait: time.Hour})
	g.knownCredential = func(cred string) bool { return cred == "Bearer alice" }
	users := g.classes[classUsers]
	b := newBlockedGate(t, g)
	entered, serve, wg := b.entered, b.serve, b.wg
	wg.Go(func() { serve(fairRequest("GET", "/v1/namespaces/a", "", "alice")) })
	<-entered
	// One made-up token queues (the flow of its source holds its class's one seat's
	// worth); the next, from the same source, is refused at once instead of queuing
	// in a flow of its own.
	wg.Go(func() { serve(fairRequest("GET", "/v1/namespaces/m1", "", "made-up-1")) })
	eventually(t, "the first made-up token queued", func() bool { _, q := users.state(); return q == 1 })
	done := make(chan *httptest.ResponseRecorder, 1)
	wg.Go(func() { done <- serve(fairRequest("GET", "/v1/namespaces/m2", "", "made-up-2")) })
	eventually(t, "the second made-up token answered or queued", func() bool {
		_, q := users.state()
		return q > 1 || len(done) > 0
	})
	if _, q := users.state(); q != 1 {
		t.Fatalf("%d requests queued: a made-up token got a flow of its own", q)
	}
	if rec := <-done; rec.Code != http.StatusTooManyRequests {
		t.Fatalf("a second made-up token from the same source: %d, want 429", rec.Code)
	}
	// A known token from the same source has its own flow.
	_, known := g.classify(fairRequest("GET", "/", "", "alice"))
	_, madeUp := g.classify(fairRequest("GET", "/", "", "made-up-3"))
	if known == madeUp || !strings.HasPrefix(madeUp, "s:") {
		t.Fatalf("flows: known %q, made up %q; want the made-up one its source's", known, madeUp)
	}
}

// A class at its seats queues its next request, refuses the one past its queue at once
// and the queued one once its wait ends (429, Retry-After), while agents and servers are
// served.
func TestFairClassAtLimitQueuesThen429(t *testing.T) {
	g := newFairGate(APISeats{Agents: 1, Servers: 1, Users: 1, Wait: time.Hour})
	users := g.classes[classUsers]
	users.queueMax = 1
	expire := make(chan time.Time)
	users.waitTimerForTest = func() <-chan time.Time { return expire }
	b := newBlockedGate(t, g)
	entered, serve, wg := b.entered, b.serve, b.wg
	wg.Go(func() { serve(fairRequest("GET", "/v1/namespaces/a", "", "alice")) })
	if p := <-entered; p != "/v1/namespaces/a" {
		t.Fatalf("entered %s", p)
	}
	queued := make(chan *httptest.ResponseRecorder, 1)
	wg.Go(func() { queued <- serve(fairRequest("GET", "/v1/namespaces/b", "", "bob")) })
	eventually(t, "bob queued", func() bool { _, q := users.state(); return q == 1 })

	rec := serve(fairRequest("GET", "/v1/namespaces/c", "", "carol"))
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("past the queue: %d Retry-After %q, want 429 and 1", rec.Code, rec.Header().Get("Retry-After"))
	}
	if !strings.Contains(rec.Body.String(), "users") {
		t.Errorf("the 429 does not name the class: %s", rec.Body)
	}

	// The other classes have their own seats.
	wg.Go(func() { serve(fairRequest("POST", "/v1/agent/nodes/n1/report", pki.OrgNodes, "n1")) })
	wg.Go(func() { serve(fairRequest("GET", "/v1/namespaces", pki.OrgServers, "s1")) })
	for range 2 {
		<-entered
	}

	close(expire)
	if rec := <-queued; rec.Code != http.StatusTooManyRequests {
		t.Fatalf("after its wait: %d, want 429", rec.Code)
	}
	if n, q := users.state(); n != 1 || q != 0 {
		t.Fatalf("users: %d seats in use, %d queued; want 1, 0", n, q)
	}
	if users.rejected != 2 {
		t.Fatalf("users: %d rejected, want 2", users.rejected)
	}
}

// A user with one request waiting is served after at most one of a busy user's queued
// requests, however many the busy one queued.
func TestFairQueuingBetweenUsers(t *testing.T) {
	c := newClassGate(1, 100, time.Hour)
	c.flowMax = 100
	ctx, cancel := context.WithCancel(context.Background())
	if err := c.acquire(ctx, "busy"); err != nil {
		t.Fatal(err)
	}
	granted := make(chan string, 20)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // a failed test's waiters leave
	enqueue := func(flow string, n int) {
		for range n {
			wg.Go(func() {
				if err := c.acquire(ctx, flow); err != nil {
					if ctx.Err() == nil {
						t.Error(err)
					}
					return
				}
				granted <- flow
			})
		}
	}
	enqueue("busy", 10)
	eventually(t, "busy's 10 queued", func() bool { _, q := c.state(); return q == 10 })
	enqueue("quiet", 1)
	eventually(t, "quiet queued", func() bool { _, q := c.state(); return q == 11 })

	var order []string
	for range 11 {
		c.release()
		order = append(order, <-granted)
	}
	c.release()
	at := -1
	for i, f := range order {
		if f == "quiet" {
			at = i
		}
	}
	if at < 0 || at > 1 {
		t.Fatalf("the quiet user was served %dth: %v", at+1, order)
	}
}

// Two busy users take turns: neither is served twice in a row while the other waits.
func TestFairQueuingAlternates(t *testing.T) {
	c := newClassGate(1, 100, time.Hour)
	c.flowMax = 100
	ctx, cancel := context.WithCancel(context.Background())
	if err := c.acquire(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	granted := make(chan string, 20)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i, flow := range []string{"a", "a", "a", "a", "b", "b", "b", "b"} {
		wg.Go(func() {
			if err := c.acquire(ctx, flow); err != nil {
				if ctx.Err() == nil {
					t.Error(err)
				}
				return
			}
			granted <- flow
		})
		eventually(t, "queued", func() bool { _, q := c.state(); return q == i+1 })
	}
	var order string
	for range 8 {
		c.release()
		order += <-granted
	}
	c.release()
	if order != "abababab" && order != "babababa" {
		t.Fatalf("turns %s, want a and b alternating", order)
	}
	if n, q := c.state(); n != 0 || q != 0 || c.turn.Len() != 0 || len(c.flows) != 0 {
		t.Fatalf("after all: %d in use, %d queued, %d flows", n, q, c.turn.Len())
	}
}

// A flow queues at most its class's seats: one user cannot fill the queue of all.
func TestFairFlowQueueBounded(t *testing.T) {
	c := newClassGate(2, 100, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	for range 2 {
		if err := c.acquire(ctx, "x"); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { c.acquire(ctx, "busy") })
	}
	eventually(t, "busy's 2 queued", func() bool { _, q := c.state(); return q == 2 })
	if err := c.acquire(ctx, "busy"); !errors.Is(err, errQueueFull) {
		t.Fatalf("busy's third queued: %v, want %v", err, errQueueFull)
	}
	cancel() // the queued clients leave: their places are given back
	wg.Wait()
	if _, q := c.state(); q != 0 || len(c.flows) != 0 {
		t.Fatalf("%d still queued", q)
	}
}

// Watches, followed logs and heartbeat streams give their seat back once their answer
// starts: a class of one seat holds many, and still serves a plain request.
func TestFairStreamsDoNotHoldSeats(t *testing.T) {
	g := newFairGate(APISeats{Agents: 1, Servers: 1, Users: 1, Wait: time.Hour})
	b := newBlockedGate(t, g)
	for _, r := range []*http.Request{
		fairRequest("GET", "/v1/namespaces/a/applications?watch=true", "", "alice"),
		fairRequest("GET", "/v1/namespaces/a/applications?watch=true", "", "alice"),
		fairRequest("GET", "/v1/namespaces/a/taskgroups/t/logs?follow=true", "", "alice"),
		fairRequest("POST", "/v1/agent/nodes/n1/heartbeats", pki.OrgNodes, "n1"),
		fairRequest("GET", "/v1/agent/nodes/n1/taskgroups?watch=true", pki.OrgNodes, "n1"),
	} {
		b.wg.Go(func() { b.serve(r) })
		<-b.entered
	}
	for _, class := range []seatClass{classUsers, classAgents} {
		if n, _ := g.classes[class].state(); n != 0 {
			t.Errorf("%s: %d seats held by streams", class, n)
		}
	}
	b.wg.Go(func() { b.serve(fairRequest("GET", "/v1/namespaces", "", "alice")) })
	b.wg.Go(func() { b.serve(fairRequest("POST", "/v1/agent/nodes/n1/report", pki.OrgNodes, "n1")) })
	for range 2 {
		<-b.entered
	}
}

// However many user requests wait or are refused, agents' beats and reports are served.
func TestFairAgentsNotRejectedByUserLoad(t *testing.T) {
	g := newFairGate(APISeats{Agents: 4, Servers: 1, Users: 1, Wait: time.Hour})
	g.knownCredential = func(string) bool { return true } // u1 to u4 are four users
	users := g.classes[classUsers]
	users.queueMax = 4
	entered, release := make(chan string, 100), make(chan struct{})
	var agents sync.WaitGroup
	h := g.handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/agent/") {
			w.WriteHeader(http.StatusOK)
			return
		}
		entered <- r.URL.Path
		<-release
	}))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(release)
	wg.Go(func() { h.ServeHTTP(httptest.NewRecorder(), fairRequest("GET", "/v1/namespaces", "", "u0")) })
	<-entered
	for i := range 4 {
		wg.Go(func() {
			h.ServeHTTP(httptest.NewRecorder(), fairRequest("GET", "/v1/namespaces", "", "u"+string(rune('1'+i))))
		})
	}
	eventually(t, "users' queue full", func() bool { _, q := users.state(); return q == 4 })
	for i := range 200 {
		node := "n" + string(rune('a'+i%26))
		for _, r := range []*http.Request{
			fairRequest("POST", "/v1/agent/nodes/"+node+"/report", pki.OrgNodes, node),
			fairRequest("PUT", "/v1/agent/nodes/"+node+"/heartbeat", pki.OrgNodes, node),
			fairRequest("GET", "/v1/namespaces", "", "late-user"),
		} {
			agents.Go(func() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				if r.TLS != nil && rec.Code != http.StatusOK {
					t.Errorf("%s %s: %d under user load", r.Method, r.URL.Path, rec.Code)
				}
				if r.TLS == nil && rec.Code != http.StatusTooManyRequests {
					t.Errorf("a user past the full queue: %d, want 429", rec.Code)
				}
			})
		}
	}
	agents.Wait()
}

// The health probes take no seat.
func TestFairProbesExempt(t *testing.T) {
	g := newFairGate(APISeats{Users: 1, Wait: time.Hour})
	g.classes[classUsers].queueMax = 0
	if err := g.classes[classUsers].acquire(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	h := g.handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for _, p := range []string{"/healthz", "/readyz"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("%s: %d with the users' seats taken", p, rec.Code)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/namespaces", nil))
	if rec.Code != http.StatusTooManyRequests {
		t.Errorf("a user with the seats taken and no queue: %d, want 429", rec.Code)
	}
}

// The metrics follow the seats taken, the requests queued and the 429s of each class.
func TestFairMetrics(t *testing.T) {
	g := newFairGate(APISeats{Users: 1, Wait: time.Hour})
	users := g.classes[classUsers]
	users.queueMax = 0
	reg := prometheus.NewRegistry()
	reg.MustRegister(g.collectors()...)
	if err := users.acquire(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	if err := users.acquire(context.Background(), "b"); !errors.Is(err, errQueueFull) {
		t.Fatalf("past the queue: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() != "users" {
				continue
			}
			got[mf.GetName()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{"berth_api_seats": 1, "berth_api_seats_in_use": 1, "berth_api_queued_requests": 0, "berth_api_rejected_requests_total": 1}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s{class=users} = %v, want %v", name, got[name], v)
		}
	}
}

// The server knows a token for fairness once it verified it: its secret must match, and a
// token it never read, or a made-up secret for a known token's ID, is not known.
func TestACLCacheKnows(t *testing.T) {
	sec, err := acl.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	var c aclCache
	if c.knows("Bearer " + sec.String()) {
		t.Fatal("a token never read is known")
	}
	c.tokens = map[string]cached[*acl.Token]{sec.ID: {v: &acl.Token{ID: sec.ID, SecretHash: jointoken.HashSecret(sec.Secret)}, at: time.Now()}}
	if !c.knows("Bearer " + sec.String()) {
		t.Fatal("a verified token is not known")
	}
	forged := acl.Secret{ID: sec.ID, Secret: strings.Repeat("a", 32)}
	for _, cred := range []string{"Bearer " + forged.String(), sec.String(), "Basic " + sec.String(), "Bearer junk"} {
		if c.knows(cred) {
			t.Errorf("%q is known", cred)
		}
	}
}
