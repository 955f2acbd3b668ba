package sim

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/berthhq/berth/internal/client"
)

// The server's own view of a burst's API requests: the request-duration histogram of
// the routes the burst's applies and probes take, read from the server's /metrics before
// and after the burst. The client's own p99 also counts its own process's waits (on this
// benchmark's machine, a client sharing two busy cores with the server and the
// simulators); the server's counts from its handler's start to its end.

const requestDuration = "berth_http_request_duration_seconds_bucket"

// Routes of the burst's requests as the server's metrics name them.
var (
	applyRoute = routeKey{method: "POST", route: "/v1/apply"}
	getRoute   = routeKey{method: "GET", route: "/v1/namespaces/{ns}/{plural}/{name}"}
)

type routeKey struct{ method, route string }

// histogram is one route's cumulative bucket counts by upper bound (seconds; +Inf last).
type histogram map[float64]uint64

// serverView is what a burst reads of the server's metrics before and after it.
type serverView struct {
	routes map[routeKey]histogram
	// counters by name: the sole etcd member's local reads and those asked again
	// (docs/store.md, "Reads"), absent when the server does not count them.
	counters map[string]float64
}

// Counters of the store's reads a burst reports.
const (
	localReads           = "berth_store_local_reads_total"
	localReadsAskedAgain = "berth_store_local_reads_asked_again_total"
)

// readServer reads the histograms of routes and the store's read counters from the
// server's metrics; nil when they cannot be read (a token without the right, an older
// server): the figures are then left out.
func readServer(ctx context.Context, c *client.Client, routes ...routeKey) *serverView {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	text, err := c.ServerMetrics(ctx)
	if err != nil {
		return nil
	}
	return &serverView{routes: parseHistograms(text, routes...), counters: parseCounters(text, localReads, localReadsAskedAgain)}
}

// since is how much counter name grew from before to v; false when unknown or gone back.
func (v *serverView) since(before *serverView, name string) (uint64, bool) {
	a, okA := v.counters[name]
	b, okB := before.counters[name]
	if !okA || !okB || a < b {
		return 0, false
	}
	return uint64(a - b), true
}

// parseCounters picks the values of unlabelled metrics out of metrics in the Prometheus
// text format.
func parseCounters(text []byte, names ...string) map[string]float64 {
	out := map[string]float64{}
	for line := range strings.Lines(string(text)) {
		name, value, ok := strings.Cut(line, " ")
		if !ok || !slices.Contains(names, name) {
			continue
		}
		if n, ok := sampleValue(value); ok {
			out[name] = n
		}
	}
	return out
}

// sampleValue is the value of a sample line's rest: a count, never negative.
func sampleValue(s string) (float64, bool) {
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return n, err == nil && n >= 0
}

// parseHistograms picks the request-duration buckets of routes out of metrics in the
// Prometheus text format (labels in the order client_golang writes them: by name).
func parseHistograms(text []byte, routes ...routeKey) map[routeKey]histogram {
	out := map[routeKey]histogram{}
	prefixes := make([]string, len(routes))
	for i, r := range routes {
		prefixes[i] = requestDuration + `{method="` + r.method + `",route="` + r.route + `",le="`
	}
	for line := range strings.Lines(string(text)) {
		for i, p := range prefixes {
			rest, ok := strings.CutPrefix(line, p)
			if !ok {
				continue
			}
			le, count, ok := strings.Cut(rest, `"} `)
			if !ok {
				break
			}
			bound, err := strconv.ParseFloat(le, 64) // "+Inf" parses as +Inf
			n, ok := sampleValue(count)
			if err != nil || !ok {
				break
			}
			if out[routes[i]] == nil {
				out[routes[i]] = histogram{}
			}
			out[routes[i]][bound] = uint64(n)
			break
		}
	}
	return out
}

// p99Since is the upper bound of the bucket that holds the 99th percentile of the
// requests counted after before (0 when none were, or when the counts went back: a
// server restarted in between; the largest finite bound when the percentile is past it,
// with over true).
func (h histogram) p99Since(before histogram) (bound time.Duration, over bool) {
	bounds := make([]float64, 0, len(h))
	for b := range h {
		if h[b] < before[b] {
			return 0, false
		}
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	total := h[math.Inf(1)] - before[math.Inf(1)]
	if total == 0 || len(bounds) < 2 {
		return 0, false
	}
	want := uint64(math.Ceil(0.99 * float64(total)))
	for _, b := range bounds {
		if h[b]-before[b] >= want {
			if math.IsInf(b, 1) {
				return secondsOf(bounds[len(bounds)-2]), true
			}
			return secondsOf(b), false
		}
	}
	return 0, false
}

func secondsOf(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// serverSince puts in r what the server measured between before and after.
func (r *LoadResult) serverSince(before, after *serverView) {
	if after == nil {
		return
	}
	r.ServerApplyP99, r.ServerApplyOver = after.routes[applyRoute].p99Since(before.routes[applyRoute])
	r.ServerGetP99, r.ServerGetOver = after.routes[getRoute].p99Since(before.routes[getRoute])
	local, ok1 := after.since(before, localReads)
	again, ok2 := after.since(before, localReadsAskedAgain)
	if ok1 && ok2 {
		r.LocalReads, r.ReadsAskedAgain, r.KnownReads = local, again, true
	}
}
