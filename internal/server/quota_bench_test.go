package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// BenchmarkApplyUnderQuota measures one apply of a process (a replacement that changes
// its instances) in a namespace holding n other processes, without a resource quota and
// with one: the quota's cost is the namespace's read and count at admission. Numbers in
// docs/benchmarks.md, "Namespace quotas".
//
//	go test -run '^$' -bench BenchmarkApplyUnderQuota -benchtime 200x ./internal/server/
func BenchmarkApplyUnderQuota(b *testing.B) {
	for _, n := range []int{100, 1000} {
		for _, withQuota := range []bool{false, true} {
			name := fmt.Sprintf("objects=%d/quota=%v", n, withQuota)
			b.Run(name, func(b *testing.B) { benchApplyUnderQuota(b, n, withQuota) })
		}
	}
}

func benchApplyUnderQuota(b *testing.B, n int, withQuota bool) {
	_, url := newTestServerOf(b, Config{})
	hc := benchClient(nil)
	send := func(method, path, body string) int {
		req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("Content-Type", "application/json")
		return benchDo(hc, req)
	}
	for from := 0; from < n; from += 100 {
		var docs []string
		for i := from; i < min(from+100, n); i++ {
			docs = append(docs, quotaBenchProc(fmt.Sprint("p", i), 1))
		}
		if code := send(http.MethodPost, "/v1/apply", strings.Join(docs, "\n")); code != http.StatusOK {
			b.Fatalf("fill the namespace: %d", code)
		}
	}
	if withQuota {
		q := `{"resources":{"cpu":100000,"memory":100000000,"instances":100000},"limitDefaults":{"max":{"cpu":8}}}`
		if code := send(http.MethodPut, "/v1/namespaces/bench/quota", q); code != http.StatusOK {
			b.Fatalf("set the quota: %d", code)
		}
	}
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if code := send(http.MethodPost, "/v1/apply", quotaBenchProc("web", 1+i%2)); code != http.StatusOK {
			b.Fatalf("apply: %d", code)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N)/1000, "ms/apply")
}

func quotaBenchProc(name string, n int) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":"bench"},"spec":{"instance":%d,"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web","resources":{"requests":{"cpu":"0.1","memory":"32"}}}]}}}}`,
		name, n)
}
