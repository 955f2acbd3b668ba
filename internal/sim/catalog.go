package sim

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/ctxtime"
)

// maxCatalogSamples bounds the latencies kept (one per instance and node).
const maxCatalogSamples = 5_000_000

// catalogLatency measures, with FollowServices, how soon an instance that turned ready
// reaches every simulated node's catalog of services (what its DNS server and service
// proxy answer from): from its agent's report of Running to the first endpoints object,
// on each node, that lists it as ready. The simulated agents share this process's clock.
// Samples are kept by the prefix of the instance's namespace (before its first dash:
// berth sim load's --prefix), so that a burst and a later phase at rest are told apart.
type catalogLatency struct {
	mu      sync.Mutex
	running map[string]time.Time           // "ns/taskgroup" -> its Running report
	seen    map[string]map[string]struct{} // node -> instances it has seen ready
	samples map[string][]time.Duration     // namespace prefix -> latencies
	total   int
}

func newCatalogLatency() *catalogLatency {
	return &catalogLatency{running: map[string]time.Time{}, seen: map[string]map[string]struct{}{}, samples: map[string][]time.Duration{}}
}

// prefixOf is the part of a namespace before its first dash.
func prefixOf(ns string) string {
	p, _, _ := strings.Cut(ns, "-")
	return p
}

// reported records a status report of task group ns/name.
func (c *catalogLatency) reported(ns, name string, st v4.TaskGroupStatus) {
	if st.Phase != v4.StatusRunning {
		return
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.running[ns+"/"+name]; !ok {
		c.running[ns+"/"+name] = now
	}
}

// observe takes an object node's catalog received.
func (c *catalogLatency) observe(node string, o v4.Object) {
	ep, ok := o.(*v4.Endpoints)
	if !ok {
		return
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := c.seen[node]
	if seen == nil {
		seen = map[string]struct{}{}
		c.seen[node] = seen
	}
	for _, e := range ep.Endpoints {
		k := ep.Metadata.Namespace + "/" + e.Target.ID
		if _, ok := seen[k]; ok {
			continue
		}
		seen[k] = struct{}{}
		if t0, ok := c.running[k]; ok && c.total < maxCatalogSamples {
			p := prefixOf(ep.Metadata.Namespace)
			c.samples[p] = append(c.samples[p], now.Sub(t0))
			c.total++
		}
	}
}

// CatalogStats summarises the latencies so far.
type CatalogStats struct {
	N             int
	P50, P99, Max time.Duration
}

// stats summarises the latencies so far, by namespace prefix.
func (c *catalogLatency) stats() map[string]CatalogStats {
	c.mu.Lock()
	byPrefix := make(map[string][]time.Duration, len(c.samples))
	for p, s := range c.samples {
		byPrefix[p] = slices.Clone(s)
	}
	c.mu.Unlock()
	out := make(map[string]CatalogStats, len(byPrefix))
	for p, s := range byPrefix {
		slices.Sort(s)
		out[p] = CatalogStats{N: len(s), P50: s[len(s)/2], P99: s[len(s)*99/100], Max: s[len(s)-1]}
	}
	return out
}

// CatalogStats is how soon instances reached the nodes' catalogs, by the prefix of
// their namespaces (nil without FollowServices).
func (s *Sim) CatalogStats() map[string]CatalogStats {
	if s.catalog == nil {
		return nil
	}
	return s.catalog.stats()
}

// logCatalog logs the latencies every 10 s while new ones come, until ctx ends.
func (s *Sim) logCatalog(ctx context.Context) {
	last := map[string]int{}
	ctxtime.Every(ctx, 10*time.Second, func() {
		stats := s.CatalogStats()
		for _, p := range slices.Sorted(maps.Keys(stats)) {
			st := stats[p]
			if st.N == last[p] {
				continue
			}
			last[p] = st.N
			s.log.Info("ready -> every node's service catalog", "prefix", p, "samples", st.N, "p50", st.P50.Round(time.Millisecond),
				"p99", st.P99.Round(time.Millisecond), "max", st.Max.Round(time.Millisecond))
		}
	})
}
