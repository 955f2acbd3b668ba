package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/client"
)

// BenchmarkUserReadsUnderLoad measures a quiet user's reads (one at a time) while
// agents (benchAgentLoops requests at once, of benchNodes nodes) and a busy user
// (benchBusyLoops at once, under its source's 64) keep the server busy, with the seats
// unbounded (as before the seats), the defaults, and fewer agents' seats. Numbers in
// docs/benchmarks.md, "API fairness".
//
//	go test -run '^$' -bench BenchmarkUserReadsUnderLoad -benchtime 400x ./internal/server/
func BenchmarkUserReadsUnderLoad(b *testing.B) {
	for _, c := range []struct {
		name  string
		seats APISeats
	}{
		{"unbounded", APISeats{Agents: 1 << 20, Servers: 1 << 20, Users: 1 << 20}},
		{"default", APISeats{}},
		{"agents-64", APISeats{Agents: 64}},
		{"agents-32", APISeats{Agents: 32}},
	} {
		b.Run(c.name, func(b *testing.B) { benchUserReads(b, c.seats) })
	}
}

const (
	benchNodes      = 128
	benchAgentLoops = 384
	benchBusyLoops  = 48
)

func benchUserReads(b *testing.B, seats APISeats) {
	_, url := newTestServerOf(b, Config{APISeats: seats})
	busyToken, quietToken := adminToken, newManagementToken(b, testStore)
	user := benchClient(nil)
	for i := range 50 {
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/namespaces/bench/configmaps", strings.NewReader(cmJSON("bench", fmt.Sprint("cm", i), strings.Repeat("x", 512))))
		req.Header.Set("Authorization", "Bearer "+busyToken)
		req.Header.Set("Content-Type", "application/json")
		if code := benchDo(user, req); code != http.StatusCreated && code != http.StatusOK {
			b.Fatalf("create configmap: %d", code)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var agentDone, busyDone, refused atomic.Int64
	loop := func(hc *http.Client, url, token string, done *atomic.Int64) {
		for ctx.Err() == nil {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			switch benchDo(hc, req) {
			case http.StatusOK:
				done.Add(1)
			case http.StatusTooManyRequests:
				refused.Add(1)
			}
		}
	}
	ca := testCA(b)
	agents := make([]*http.Client, benchNodes)
	for i := range agents {
		cert := nodeCertificate(b, ca, fmt.Sprint("bn", i))
		agents[i] = benchClient(&cert)
	}
	for i := range benchAgentLoops {
		node := i % benchNodes
		wg.Go(func() {
			loop(agents[node], fmt.Sprintf("%s/v1/agent/nodes/bn%d/taskgroups", url, node), "", &agentDone)
		})
	}
	for range benchBusyLoops {
		wg.Go(func() { loop(user, url+"/v1/namespaces/bench/configmaps", busyToken, &busyDone) })
	}
	time.Sleep(time.Second) // the load's connections are open

	quiet := benchClient(nil)
	lat := make([]time.Duration, 0, b.N)
	a0, u0, start := agentDone.Load(), busyDone.Load(), time.Now()
	b.ResetTimer()
	for range b.N {
		req, _ := http.NewRequest(http.MethodGet, url+"/v1/namespaces/bench/configmaps/cm7", nil)
		req.Header.Set("Authorization", "Bearer "+quietToken)
		t0 := time.Now()
		if code := benchDo(quiet, req); code != http.StatusOK {
			b.Fatalf("quiet read: %d", code)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	elapsed := time.Since(start).Seconds()
	a, u := agentDone.Load()-a0, busyDone.Load()-u0
	cancel()
	wg.Wait()
	slices.Sort(lat)
	ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(ms(0.5), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
	b.ReportMetric(float64(a)/elapsed, "agent-req/s")
	b.ReportMetric(float64(u)/elapsed, "busy-req/s")
	b.ReportMetric(float64(refused.Load()), "429s")
}

// benchClient is a client of the test CA, a node's with cert, keeping enough idle
// connections that the load does not handshake again and again.
func benchClient(cert *tls.Certificate) *http.Client {
	var get func(*tls.CertificateRequestInfo) (*tls.Certificate, error)
	if cert != nil {
		get = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	hc := client.HTTPClient(roots, get)
	hc.Transport.(*http.Transport).MaxIdleConnsPerHost = 1024
	return hc
}

// benchDo sends req and reads its answer whole; 0 when it failed.
func benchDo(hc *http.Client, req *http.Request) int {
	resp, err := hc.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
