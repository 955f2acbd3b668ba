package webhook

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkWrite is what one write through 5 mutating hooks (each adds a label) and 5
// validating ones (each allows) costs, with 32 writes in flight against a loopback TLS
// hook server in this process: ns/op is the throughput's inverse on this machine, and
// cpu-us/op the CPU time of both sides (the caller, the hook server, the kernel's
// loopback) a write, the figure that lowers a busy server's capacity.
func BenchmarkWrite(b *testing.B) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(serveLabelHook))
	srv.EnableHTTP2 = false
	srv.StartTLS()
	b.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	var mutating, validating []*Hook
	for i := range 5 {
		mutating = append(mutating, &Hook{Config: fmt.Sprintf("m%d", i), Name: "h", URL: fmt.Sprintf("%s/label/h%d", srv.URL, i),
			Pool: pool, Mutating: true, Timeout: 10 * time.Second})
		validating = append(validating, &Hook{Config: fmt.Sprintf("v%d", i), Name: "h", URL: srv.URL + "/allow", Pool: pool, Timeout: 10 * time.Second})
	}
	c := NewClient(Options{})
	obj := []byte(`{"apiVersion":"v4","kind":"process","metadata":{"name":"app-1","namespace":"bench-1","labels":{"app":"app-1"}},` +
		`"spec":{"instance":10,"template":{"spec":{"processes":[{"procName":"bench","startCmd":"./bench",` +
		`"resources":{"requests":{"cpu":"0.01","memory":"8"},"limits":{"cpu":"0.01","memory":"8"}}}]}}}}`)
	write := func() error {
		req := Request{Kind: "process", Operation: "CREATE", Namespace: "bench-1", Name: "app-1", Object: obj,
			UserInfo: UserInfo{Username: "admin", Management: true}}
		out, changed, err := c.Mutate(context.Background(), mutating, req)
		if err != nil {
			return err
		}
		if !changed || !strings.Contains(string(out), `"bench-h4":"yes"`) {
			return fmt.Errorf("not mutated: %s", out)
		}
		req.Object = out
		return c.Validate(context.Background(), validating, req)
	}
	if err := write(); err != nil { // the connections, before the clock
		b.Fatal(err)
	}
	before := cpuTime()
	b.ResetTimer()
	b.SetParallelism(16) // 32 in flight on 2 CPUs, as a burst of applies
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := write(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-before).Microseconds())/float64(b.N), "cpu-us/op")
}

// cpuTime is this process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serveLabelHook answers /label/NAME with a patch adding the label bench-NAME=yes, and
// anything else with allowed.
func serveLabelHook(w http.ResponseWriter, r *http.Request) {
	var rv Review
	if err := json.NewDecoder(r.Body).Decode(&rv); err != nil || rv.Request == nil {
		http.Error(w, "not a review", http.StatusBadRequest)
		return
	}
	resp := &Response{UID: rv.Request.UID, Allowed: true}
	if name, ok := strings.CutPrefix(r.URL.Path, "/label/"); ok {
		resp.PatchType, resp.Patch = "JSONPatch", json.RawMessage(`[{"op":"add","path":"/metadata/labels/bench-`+name+`","value":"yes"}]`)
	}
	json.NewEncoder(w).Encode(Review{APIVersion: ReviewAPIVersion, Kind: "AdmissionReview", Response: resp})
}
