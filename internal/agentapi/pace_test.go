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
		hi       time.Duration // the longest TTL the lease may keep
	}{
		{"no nodes yet", p, 0, 3 * s, 10 * s, 10 * s},
		{"small cluster: the floor", p, 100, 3 * s, 10 * s, 10 * s},
		{"at the bound at the floor", p, 1500, 3 * s, 10 * s, 10 * s},
		{"just over: up to twice the interval", p, 1501, 4 * s, 13 * s, 25 * s},
		{"2,000 nodes", p, 2000, 4 * s, 13 * s, 25 * s},
		{"5,000 nodes", p, 5000, 10 * s, 31 * s, 31 * s},
		{"10,000 nodes: the ceiling wins over the bound", p, 10000, 10 * s, 31 * s, 31 * s},
		{"a bound of 50 a second", Pace{MaxBeatsPerSecond: 50, Floor: 3 * s, Ceiling: 10 * s, NodeTTL: 10 * s}, 200, 4 * s, 13 * s, 25 * s},
		{"no bound", Pace{Floor: 3 * s, Ceiling: 10 * s, NodeTTL: 10 * s}, 1e6, 3 * s, 10 * s, 10 * s},
		{"a ceiling under the floor is the floor", Pace{MaxBeatsPerSecond: 500, Floor: 3 * s, Ceiling: 1 * s, NodeTTL: 10 * s}, 5000, 3 * s, 10 * s, 10 * s},
		{"a longer node ttl keeps its grace", Pace{MaxBeatsPerSecond: 500, Floor: 3 * s, Ceiling: 10 * s, NodeTTL: 60 * s}, 5000, 10 * s, 200 * s, 200 * s},
		{"a node ttl under the floor", Pace{MaxBeatsPerSecond: 500, Floor: 3 * s, Ceiling: 10 * s, NodeTTL: 2 * s}, 5000, 10 * s, 23 * s, 23 * s},
	} {
		t.Run(c.name, func(t *testing.T) {
			iv := c.p.Interval(c.nodes)
			if iv != c.interval {
				t.Fatalf("interval of %d nodes: %s, want %s", c.nodes, iv, c.interval)
			}
			if ttl := c.p.TTL(iv); ttl != c.ttl {
				t.Fatalf("ttl at %s: %s, want %s", iv, ttl, c.ttl)
			}
			if lo, hi := c.p.TTLs(iv); lo != c.ttl || hi != c.hi {
				t.Fatalf("ttls at %s: %s to %s, want %s to %s", iv, lo, hi, c.ttl, c.hi)
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
// A lease moves only when its TTL leaves the range of its interval (TTLs), to the range's
// top.
func TestPaceHandover(t *testing.T) {
	p := Pace{MaxBeatsPerSecond: 500, Floor: 3 * s, Ceiling: 10 * s, NodeTTL: 10 * s}
	type beat struct {
		want  time.Duration // the cluster's interval at this beat
		tell  bool
		lease time.Duration // the lease's TTL after the beat
	}
	for _, c := range []struct {
		name  string
		start time.Duration // the lease's TTL when the stream opens
		beats []beat
	}{
		{"a new stream tells at once", 10 * s, []beat{{3 * s, true, 10 * s}, {3 * s, false, 10 * s}, {3 * s, false, 10 * s}}},
		{"a longer lease of an earlier stream stays until the agent beats at its interval", 31 * s, []beat{
			{3 * s, true, 31 * s}, {3 * s, false, 31 * s}, {3 * s, false, 10 * s}}},
		{"growing: the longer ttl on the beat that tells, the top of its range", 10 * s, []beat{
			{3 * s, true, 10 * s}, {3 * s, false, 10 * s}, {4 * s, true, 25 * s}, {4 * s, false, 25 * s},
			{5 * s, true, 25 * s}, {8 * s, true, 25 * s}, {9 * s, true, 31 * s}, {10 * s, true, 31 * s}}},
		{"shrinking: the longer ttl stays until the agent beat at the new interval", 31 * s, []beat{
			{10 * s, true, 31 * s}, {10 * s, false, 31 * s}, {10 * s, false, 31 * s},
			{4 * s, true, 31 * s}, {4 * s, false, 31 * s}, {4 * s, false, 25 * s},
			{3 * s, true, 25 * s}, {3 * s, false, 25 * s}, {3 * s, false, 10 * s}}},
		{"back and forth before settling never shrinks", 31 * s, []beat{
			{10 * s, true, 31 * s}, {3 * s, true, 31 * s}, {10 * s, true, 31 * s},
			{3 * s, true, 31 * s}, {3 * s, false, 31 * s}, {3 * s, false, 10 * s}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var h handover
			lease := c.start
			agent := 3 * s // the interval the agent beats at: its own on a new stream
			for i, b := range c.beats {
				tell, lo, hi, shrink := h.next(p, b.want)
				if tell != b.tell {
					t.Fatalf("beat %d (interval %s): tell %v, want %v", i, b.want, tell, b.tell)
				}
				if lease < lo || lease > hi && shrink { // as Store.SetLeaseTTL does
					lease = hi
				}
				if lease != b.lease {
					t.Fatalf("beat %d (interval %s): the lease's ttl is %s, want %s", i, b.want, lease, b.lease)
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

// The server's default pace keeps the beats of a cluster of any size under its bound up
// to the ceiling, and the TTL at the ceiling within a few minutes (docs/agent.md, the
// table of "Heartbeat interval and node TTL").
func TestDefaultPace(t *testing.T) {
	p := defaultPace(DefaultMaxBeatsPerSecond, 10*s)
	for _, c := range []struct {
		nodes        int
		interval     time.Duration
		ttlLo, ttlHi time.Duration
	}{
		{750, 3 * s, 10 * s, 10 * s},
		{1000, 4 * s, 13 * s, 25 * s},
		{2000, 8 * s, 25 * s, 49 * s},
		{5000, 20 * s, 61 * s, 121 * s},
		{10000, 40 * s, 121 * s, 181 * s},
		{15000, 60 * s, 181 * s, 181 * s},
		{100000, 60 * s, 181 * s, 181 * s},
	} {
		iv := p.Interval(c.nodes)
		lo, hi := p.TTLs(iv)
		if iv != c.interval || lo != c.ttlLo || hi != c.ttlHi {
			t.Errorf("%d nodes: every %s, ttl %s to %s; want every %s, ttl %s to %s", c.nodes, iv, lo, hi, c.interval, c.ttlLo, c.ttlHi)
		}
		if rate := float64(c.nodes) / iv.Seconds(); iv < p.Ceiling && rate > DefaultMaxBeatsPerSecond {
			t.Errorf("%d nodes every %s: %.0f beats a second, over the bound", c.nodes, iv, rate)
		}
	}
}
