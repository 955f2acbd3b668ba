package sim

import (
	"context"
	"slices"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// maxCatalogSamples bounds the latencies kept (one per instance and node).
const maxCatalogSamples = 5_000_000

// catalogLatency measures, with FollowServices, how soon an instance that turned ready
// reaches every simulated node's catalog of services (what its DNS server and service
// proxy answer from): from its agent's report of Running to the first endpoints object,
// on each node, that lists it as ready. The simulated agents share this process's clock.
type catalogLatency struct {
	mu      sync.Mutex
	running map[string]time.Time           // "ns/taskgroup" -> its Running report
	seen    map[string]map[string]struct{} // node -> instances it has seen ready
	samples []time.Duration
}

func newCatalogLatency() *catalogLatency {
	return &catalogLatency{running: map[string]time.Time{}, seen: map[string]map[string]struct{}{}}
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
		if t0, ok := c.running[k]; ok && len(c.samples) < maxCatalogSamples {
			c.samples = append(c.samples, now.Sub(t0))
		}
	}
}

// CatalogStats summarises the latencies so far.
type CatalogStats struct {
	N             int
	P50, P99, Max time.Duration
}

func (c *catalogLatency) stats() CatalogStats {
	c.mu.Lock()
	s := slices.Clone(c.samples)
	c.mu.Unlock()
	if len(s) == 0 {
		return CatalogStats{}
	}
	slices.Sort(s)
	return CatalogStats{N: len(s), P50: s[len(s)/2], P99: s[len(s)*99/100], Max: s[len(s)-1]}
}

// CatalogStats is how soon instances reached the nodes' catalogs (zero without
// FollowServices).
func (s *Sim) CatalogStats() CatalogStats {
	if s.catalog == nil {
		return CatalogStats{}
	}
	return s.catalog.stats()
}

// logCatalog logs the latencies every 10 s while new ones come, until ctx ends.
func (s *Sim) logCatalog(ctx context.Context) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	last := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st := s.CatalogStats()
		if st.N == last {
			continue
		}
		last = st.N
		s.log.Info("ready -> every node's service catalog", "samples", st.N, "p50", st.P50.Round(time.Millisecond),
			"p99", st.P99.Round(time.Millisecond), "max", st.Max.Round(time.Millisecond))
	}
}
