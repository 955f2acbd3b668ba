package agentapi

import (
	"math"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// Heartbeats that scale with the cluster (docs/agent.md, Heartbeats), as Nomad scales
// its heartbeat TTL with the node count: each server counts the nodes of the whole
// cluster (its shared node cache, the same on every server, so their intervals agree)
// and tells each agent, in its heartbeat stream's acknowledgements, to beat every
// nodes / MaxBeatsPerSecond seconds, in whole seconds, between the floor (the agent's
// default interval) and the ceiling. A node's TTL follows the interval it was given:
// the node may miss as many beats as at the floor before it is Lost.

// DefaultMaxBeatsPerSecond bounds the cluster's heartbeats by default: 750 nodes beat at
// the floor interval, 5,000 every 20 s, 10,000 every 40 s. A beat costs the server 90 to
// 200 µs of CPU (the HTTP/2 frame and TLS record read, the hops between the connection's
// goroutines, the lease renewal, the acknowledgement: docs/benchmarks.md), so the beats
// of a cluster of any size take 2 to 5% of a core; Nomad bounds its heartbeats at 50 a
// second by default.
const DefaultMaxBeatsPerSecond = 250

// Pace computes a node's heartbeat interval and TTL.
type Pace struct {
	// MaxBeatsPerSecond bounds the beats of the whole cluster (0: no bound, the floor).
	MaxBeatsPerSecond float64
	// Floor and Ceiling bound the interval; the ceiling wins over the bound, so that a
	// node's loss is still noticed in time in the largest clusters.
	Floor, Ceiling time.Duration
	// NodeTTL is a node's TTL at the floor interval (the server's --node-ttl).
	NodeTTL time.Duration
}

// Interval is the interval the agents of a cluster of nodes nodes beat at.
func (p Pace) Interval(nodes int) time.Duration {
	iv := p.Floor
	if p.MaxBeatsPerSecond > 0 && nodes > 0 {
		need := time.Duration(math.Ceil(float64(nodes)/p.MaxBeatsPerSecond)) * time.Second
		iv = max(iv, need)
	}
	return min(iv, max(p.Ceiling, p.Floor))
}

// TTL is the TTL of a node whose agent beats every interval: the TTL at the floor and
// as many more intervals' worth as the floor's TTL holds beats, at least 3 (interval × k
// + grace), so a slower node may miss as many beats as one at the floor. It never falls below
// NodeTTL: an agent that beats at its own fixed interval (one that does not read the
// interval it is given) is as safe as before.
func (p Pace) TTL(interval time.Duration) time.Duration {
	if interval <= p.Floor || p.Floor <= 0 {
		return p.NodeTTL
	}
	// The beats a TTL holds at the floor, at least 3: a node ttl shorter than the floor
	// (its agents beat faster than the floor) still gets 3 intervals' more.
	beats := max(3, int64(p.NodeTTL/p.Floor))
	return p.NodeTTL + time.Duration(beats)*(interval-p.Floor)
}

// TTLs is the range of TTLs a node's lease may have while its agent beats every
// interval: from TTL(interval) up to the TTL of twice the interval (at most the
// ceiling's), and exactly NodeTTL at the floor. A lease is given the upper end when it
// must change, so that a cluster that grows moves each node's lease to a longer TTL
// (one etcd write a node) once per doubling of its interval rather than at each second
// of it.
func (p Pace) TTLs(interval time.Duration) (lo, hi time.Duration) {
	lo = p.TTL(interval)
	if interval <= p.Floor {
		return lo, lo
	}
	return lo, max(lo, p.TTL(min(2*interval, max(p.Ceiling, p.Floor))))
}

// defaultPace is the pace of a server with the default bound and ttl.
func defaultPace(maxBeats float64, ttl time.Duration) Pace {
	return Pace{MaxBeatsPerSecond: maxBeats, Floor: v4.MinHeartbeatInterval, Ceiling: v4.MaxHeartbeatInterval, NodeTTL: ttl}
}

// handover is one heartbeat stream's view of its agent's interval, so that a change of
// interval never makes a node Lost: a longer interval's TTL is set on the node's lease
// before the agent is told to slow down, and a shorter one only once the agent has beaten
// at it (two beats after it was told: the first may have been on the old timer).
type handover struct {
	told   time.Duration // the interval last told to the agent (0: none yet)
	settle int           // beats to go until the agent surely beats at told
}

// handoverBeats is how many beats after a change the lease keeps a TTL at least as long
// as before.
const handoverBeats = 2

// next takes a beat when the cluster's interval is want. It says whether to tell the
// agent (an acknowledgement now, with want), the range of TTLs the node's lease should
// have (TTLs), and whether a longer lease may shrink into it (otherwise it may only
// grow).
func (h *handover) next(p Pace, want time.Duration) (tell bool, lo, hi time.Duration, shrink bool) {
	lo, hi = p.TTLs(want)
	if want != h.told {
		h.told, h.settle = want, handoverBeats
		return true, lo, hi, false
	}
	if h.settle > 0 {
		h.settle--
	}
	return false, lo, hi, h.settle == 0
}
