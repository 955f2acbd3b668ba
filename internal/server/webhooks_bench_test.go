package server

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkWebhookApply measures what admission webhooks add to an apply: the same
// apply of one configmap with no hook, and with a loopback mutating hook (adds a label)
// and a validating one. It reports the p50 and p99 of each apply, and with hooks those of
// the webhook step alone as the server times it (berth_admission_webhook_step_seconds):
// the overhead (docs/benchmarks.md, "Admission webhooks").
func BenchmarkWebhookApply(b *testing.B) {
	for _, hooked := range []bool{false, true} {
		b.Run(fmt.Sprintf("hooks=%v", hooked), func(b *testing.B) {
			srv, url := newTestServerOf(b, Config{})
			hooks := newTestHooks(b)
			var mu sync.Mutex
			var steps []time.Duration
			srv.webhooks.onStep = func(d time.Duration) { mu.Lock(); steps = append(steps, d); mu.Unlock() }
			if hooked {
				for _, c := range []struct{ name, typ, path string }{{"a-label", "Mutating", "/label"}, {"b-deny", "Validating", "/deny"}} {
					r := callB(b, http.MethodPut, url+"/v1/admissionwebhooks/"+c.name, hooks.config(c.name, c.typ, c.path, "bench", "Fail"))
					if r.code != http.StatusCreated {
						b.Fatalf("%d %s", r.code, r.body)
					}
				}
			}
			took := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				r := callB(b, http.MethodPost, url+"/v1/apply", cmJSON("bench", fmt.Sprintf("cm-%d", i%50), fmt.Sprint(i)))
				took = append(took, time.Since(start))
				if r.code != http.StatusOK {
					b.Fatalf("%d %s", r.code, r.body)
				}
			}
			b.StopTimer()
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
			mu.Lock()
			defer mu.Unlock()
			if len(steps) > 0 { // the webhook step alone, timed in the server
				slices.Sort(steps)
				b.ReportMetric(float64(steps[len(steps)/2].Microseconds())/1000, "step-p50-ms")
				b.ReportMetric(float64(steps[len(steps)*99/100].Microseconds())/1000, "step-p99-ms")
			}
		})
	}
}

// callB is call for benchmarks: the administrator's request, the answer read whole.
func callB(b *testing.B, method, url, body string) response {
	b.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	resp, err := httpClientAs(b, "").Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, data}
}
