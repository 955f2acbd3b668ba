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
`

func TestServerPercentiles(t *testing.T) {
	before := parseHistograms([]byte(metricsBefore), applyRoute, getRoute)
	after := parseHistograms([]byte(metricsAfter), applyRoute, getRoute)
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
	} {
		if got := tc.r.serverNote(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.r, got, tc.want)
		}
	}
}
