package agentapi

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berthhq/berth/internal/ctxtime"
)

// beatStreams holds each node's live heartbeat stream: a node has one. A new stream of a
// node ends the one before it, so an agent that opened another stream (it took the old
// one for dead) is not served twice, and a misbehaving agent cannot hold thousands of
// streams (a goroutine and a connection each) under one node's name.
type beatStreams struct {
	mu   sync.Mutex
	live map[string]*liveBeatStream
}

// liveBeatStream is one open stream: cancel ends its handler's context.
type liveBeatStream struct {
	cancel   context.CancelFunc
	replaced atomic.Bool  // a newer stream of its node took its place
	idled    atomic.Bool  // the sweep ended it: nothing came on it for beatStreamIdle
	lastBeat atomic.Int64 // when its last beat was read (unix nanoseconds)
}

// beat records that a beat was read now.
func (s *liveBeatStream) beat(now time.Time) { s.lastBeat.Store(now.UnixNano()) }

// open registers node's new stream, whose handler's context cancel ends, and ends the
// one before. close unregisters it, unless a newer one already took its place.
func (b *beatStreams) open(node string, cancel context.CancelFunc) (s *liveBeatStream, close func()) {
	s = &liveBeatStream{cancel: cancel}
	s.beat(time.Now())
	b.mu.Lock()
	if b.live == nil {
		b.live = map[string]*liveBeatStream{}
	}
	if old := b.live[node]; old != nil {
		old.replaced.Store(true)
		old.cancel()
	}
	b.live[node] = s
	b.mu.Unlock()
	return s, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.live[node] == s {
			delete(b.live, node)
		}
	}
}

// count is the number of live streams.
func (b *beatStreams) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.live)
}

// Silent streams are ended by one sweep of them all every beatStreamIdle/4, not by a
// read deadline on each: a deadline is a runtime timer per stream, moved as beats come,
// and the Go runtime walks every timer of its heap when one moved is due, which at 5,000
// streams was a quarter of an idle server's CPU (docs/benchmarks.md, "Timers"). The sweep
// ends a stream 3 to 3.75 minutes after its last beat; one whose handler is stuck writing
// to an agent that does not read stops reading beats too, so it is ended the same way.

// sweepEvery is how often the streams are swept.
const sweepEvery = beatStreamIdle / 4

// sweep ends the streams on which no beat came since before now-idle and returns how many.
func (b *beatStreams) sweep(now time.Time, idle time.Duration) int {
	before := now.Add(-idle).UnixNano()
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, s := range b.live {
		if s.lastBeat.Load() < before && !s.idled.Load() {
			s.idled.Store(true)
			s.cancel()
			n++
		}
	}
	return n
}

// sweepUntil sweeps the streams every sweepEvery until ctx ends.
func (b *beatStreams) sweepUntil(ctx context.Context) {
	ctxtime.Every(ctx, sweepEvery, func() { b.sweep(time.Now(), beatStreamIdle) })
}

// SweepBeatStreams ends at once the heartbeat streams on which no beat came for longer
// than idle, and returns how many (the API sweeps every beatStreamIdle/4 by itself).
func (a *API) SweepBeatStreams(idle time.Duration) int {
	return a.beatStreams.sweep(time.Now(), idle)
}
