package agentapi

import (
	"testing"
	"time"
)

const s = time.Second

// The interval keeps the cluster's beats under the bound, in whole seconds, between the
// floor and the ceiling; the TTL follows it and never falls below the floor's.
func TestPaceInterval(t *testing.T) {
	p := Pace{MaxBeatsPerSecond: 500, Floor: 3 * s, Ceiling: 10 * s, NodeTTL: 10 * s}
	for _, c := range []struct {
		name     string
		p        Pace
		nodes    int
		interval time.Duration
		ttl      time.Duration
	}{
		{"no nodes yet", p, 0, 3 * s, 10 * s},
		{"small cluster: the floor", p, 100, 3 * s, 10 * s},
		{"at the bound at the floor", p, 1500, 3 * s, 10 * s},
		{"just over", p, 1501, 4 * s, 13 * s},
		{"2,000 nodes", p, 2000, 4 * s, 13 * s},
		{"5,000 nodes", p, 5000, 10 * s, 31 * s},
		{"10,000 nodes: the ceiling wins over the bound", p, 10000, 10 * s, 31 * s},
		{"a bound of 50 a second", Pace{MaxBeatsPerSecond: 50, Floor: 3 * s, Ceiling: 10 * s, NodeTTL: 10 * s}, 200, 4 * s, 13 * s},
		{"no bound", Pace{Floor: 3 * s, Ceiling: 10 * s, NodeTTL: 10 * s}, 1e6, 3 * s, 10 * s},
		{"a ceiling under the floor is the floor", Pace{MaxBeatsPerSecond: 500, Floor: 3 * s, Ceiling: 1 * s, NodeTTL: 10 * s}, 5000, 3 * s, 10 * s},
		{"a longer node ttl keeps its grace", Pace{MaxBeatsPerSecond: 500, Floor: 3 * s, Ceiling: 10 * s, NodeTTL: 60 * s}, 5000, 10 * s, 200 * s},
		{"a node ttl under the floor", Pace{MaxBeatsPerSecond: 500, Floor: 3 * s, Ceiling: 10 * s, NodeTTL: 2 * s}, 5000, 10 * s, 9 * s},
	} {
		t.Run(c.name, func(t *testing.T) {
			iv := c.p.Interval(c.nodes)
			if iv != c.interval {
				t.Fatalf("interval of %d nodes: %s, want %s", c.nodes, iv, c.interval)
			}
			if ttl := c.p.TTL(iv); ttl != c.ttl {
				t.Fatalf("ttl at %s: %s, want %s", iv, ttl, c.ttl)
			}
			if c.p.MaxBeatsPerSecond > 0 && iv < c.p.Ceiling && float64(c.nodes)/iv.Seconds() > c.p.MaxBeatsPerSecond {
				t.Fatalf("%d nodes every %s beat over the bound of %g/s", c.nodes, iv, c.p.MaxBeatsPerSecond)
			}
		})
	}
}

// A change of interval never leaves a node's lease shorter than the TTL of the interval
// its agent may still beat at: a longer interval's TTL is set before the agent is told
// (on the beat that tells it), and a shorter one only once the agent has beaten at it.
func TestPaceHandover(t *testing.T) {
	p := Pace{MaxBeatsPerSecond: 500, Floor: 3 * s, Ceiling: 10 * s, NodeTTL: 10 * s}
	type beat struct {
		want   time.Duration // the cluster's interval at this beat
		tell   bool
		ttl    time.Duration
		shrink bool
	}
	for _, c := range []struct {
		name  string
		beats []beat
	}{
		{"a new stream tells at once and only grows the lease until settled", []beat{
			{3 * s, true, 10 * s, false}, {3 * s, false, 10 * s, false}, {3 * s, false, 10 * s, true}, {3 * s, false, 10 * s, true}}},
		{"growing: the longer ttl on the beat that tells", []beat{
			{3 * s, true, 10 * s, false}, {3 * s, false, 10 * s, false}, {3 * s, false, 10 * s, true},
			{10 * s, true, 31 * s, false}, {10 * s, false, 31 * s, false}, {10 * s, false, 31 * s, true}}},
		{"shrinking: the longer ttl stays until the agent beat at the new interval", []beat{
			{10 * s, true, 31 * s, false}, {10 * s, false, 31 * s, false}, {10 * s, false, 31 * s, true},
			{3 * s, true, 10 * s, false}, {3 * s, false, 10 * s, false}, {3 * s, false, 10 * s, true}}},
		{"back and forth before settling never shrinks", []beat{
			{10 * s, true, 31 * s, false}, {3 * s, true, 10 * s, false}, {10 * s, true, 31 * s, false},
			{3 * s, true, 10 * s, false}, {3 * s, false, 10 * s, false}, {3 * s, false, 10 * s, true}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var h handover
			lease := time.Duration(0) // the TTL the lease has, as SetLeaseTTL leaves it
			agent := 3 * s            // the interval the agent beats at
			for i, b := range c.beats {
				tell, ttl, shrink := h.next(p, b.want)
				if tell != b.tell || ttl != b.ttl || shrink != b.shrink {
					t.Fatalf("beat %d (interval %s): tell %v, ttl %s, shrink %v; want %v, %s, %v", i, b.want, tell, ttl, shrink, b.tell, b.ttl, b.shrink)
				}
				if ttl > lease || shrink {
					lease = ttl
				}
				// The gap to the next beat: on the beat that tells, the agent may still
				// be on its old timer (the slower of the two); after it, on the new one.
				if tell {
					agent = max(agent, b.want)
				} else {
					agent = b.want
				}
				if lease < p.TTL(agent) {
					t.Fatalf("beat %d: the lease's ttl %s is under the %s an agent beating every %s needs", i, lease, p.TTL(agent), agent)
				}
			}
		})
	}
}
