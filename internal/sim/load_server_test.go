package sim

import (
	"testing"
	"time"
)

const metricsBefore = `# HELP berth_http_request_duration_seconds Time to serve a request.
# TYPE berth_http_request_duration_seconds histogram
berth_http_request_duration_seconds_bucket{method="GET",route="/v1/namespaces/{ns}/{plural}/{name}",le="0.005"} 10
berth_http_request_duration_seconds_bucket{method="GET",route="/v1/namespaces/{ns}/{plural}/{name}",le="0.05"} 10
berth_http_request_duration_seconds_bucket{method="GET",route="/v1/namespaces/{ns}/{plural}/{name}",le="0.5"} 10
berth_http_request_duration_seconds_bucket{method="GET",route="/v1/namespaces/{ns}/{plural}/{name}",le="+Inf"} 10
berth_http_request_duration_seconds_bucket{method="GET",route="/v1/nodes",le="0.005"} 3
berth_http_request_duration_seconds_bucket{method="GET",route="/v1/nodes",le="+Inf"} 3
# TYPE berth_store_local_reads_total counter
berth_store_local_reads_total 1000
berth_store_local_reads_asked_again_total 7
`

// 100 more GETs: 90 within 5 ms, 9 within 50 ms, 1 within 500 ms; 100 applies, one slower
// than the largest bound.
const metricsAfter = `berth_http_request_duration_seconds_bucket{method="GET",route="/v1/namespaces/{ns}/{plural}/{name}",le="0.005"} 100
berth_http_request_duration_seconds_bucket{method="GET",route="/v1/namespaces/{ns}/{plural}/{name}",le="0.05"} 109
berth_http_request_duration_seconds_bucket{method="GET",route="/v1/namespaces/{ns}/{plural}/{name}",le="0.5"} 110
berth_http_request_duration_seconds_bucket{method="GET",route="/v1/namespaces/{ns}/{plural}/{name}",le="+Inf"} 110
berth_http_request_duration_seconds_bucket{method="POST",route="/v1/apply",le="0.005"} 0
berth_http_request_duration_seconds_bucket{method="POST",route="/v1/apply",le="10"} 98
berth_http_request_duration_seconds_bucket{method="POST",route="/v1/apply",le="+Inf"} 100
berth_http_request_duration_seconds_bucket{method="POST",route="/v1/apply",le="bad"} 100
berth_store_local_reads_total 1.5e+06
berth_store_local_reads_asked_again_total 7
`

// view parses metrics as readServer does.
func view(metrics string) *serverView {
	return &serverView{routes: parseHistograms([]byte(metrics), applyRoute, getRoute),
		counters: parseCounters([]byte(metrics), localReads, localReadsAskedAgain)}
}

func TestServerPercentiles(t *testing.T) {
	before, after := view(metricsBefore).routes, view(metricsAfter).routes
	if len(before[getRoute]) != 4 || before[applyRoute] != nil {
		t.Fatalf("before: %v", before)
	}
	for _, tc := range []struct {
		name  string
		route routeKey
		want  time.Duration
		over  bool
	}{
		{"the GETs' 99th of 100 is in the 50 ms bucket", getRoute, 50 * time.Millisecond, false},
		{"an apply's past the largest bound", applyRoute, 10 * time.Second, true},
		{"a route not in the metrics", routeKey{"GET", "/v1/none"}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, over := after[tc.route].p99Since(before[tc.route])
			if got != tc.want || over != tc.over {
				t.Fatalf("p99 %s (over %v), want %s (over %v)", got, over, tc.want, tc.over)
			}
		})
	}
	// Nothing served since, or counts gone back (a restarted server): no percentile.
	if got, _ := before[getRoute].p99Since(before[getRoute]); got != 0 {
		t.Fatalf("no request since: p99 %s", got)
	}
	if got, _ := before[getRoute].p99Since(after[getRoute]); got != 0 {
		t.Fatalf("counts that went back: p99 %s", got)
	}
}

func TestServerNote(t *testing.T) {
	for _, tc := range []struct {
		r    LoadResult
		want string
	}{
		{LoadResult{}, ""},
		{LoadResult{ServerApplyP99: 10 * time.Second, ServerApplyOver: true, ServerGetP99: 50 * time.Millisecond},
			"; as the server measured them (its histogram's bucket): apply p99 > 10s, GET p99 <= 50ms"},
		{LoadResult{ServerGetP99: 50 * time.Millisecond, KnownReads: true, LocalReads: 900, ReadsAskedAgain: 3},
			"; as the server measured them (its histogram's bucket): apply p99 unknown, GET p99 <= 50ms; its etcd member served 900 reads from its applied state, 3 of them asked again through raft"},
	} {
		if got := tc.r.serverNote(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.r, got, tc.want)
		}
	}
}

// TestServerReads: the store's read counters grew by the burst's reads; none when a
// counter is missing (an older server) or went back (a restarted one).
func TestServerReads(t *testing.T) {
	for _, tc := range []struct {
		name              string
		before, after     *serverView
		known             bool
		local, askedAgain uint64
	}{
		{"counted", view(metricsBefore), view(metricsAfter), true, 1_499_000, 0},
		{"gone back", view(metricsAfter), view(metricsBefore), false, 0, 0},
		{"not counted", view(metricsBefore), view("berth_store_local_reads_total 5\n"), false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r LoadResult
			r.serverSince(tc.before, tc.after)
			if r.KnownReads != tc.known || r.LocalReads != tc.local || r.ReadsAskedAgain != tc.askedAgain {
				t.Fatalf("known %v, local %d, asked again %d; want %v, %d, %d", r.KnownReads, r.LocalReads, r.ReadsAskedAgain, tc.known, tc.local, tc.askedAgain)
			}
		})
	}
}
