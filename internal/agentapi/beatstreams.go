package agentapi

import (
	"context"
	"sync"
	"sync/atomic"
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
	replaced atomic.Bool // a newer stream of its node took its place
}

// open registers node's new stream, whose handler's context cancel ends, and ends the
// one before. close unregisters it, unless a newer one already took its place.
func (b *beatStreams) open(node string, cancel context.CancelFunc) (s *liveBeatStream, close func()) {
	s = &liveBeatStream{cancel: cancel}
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
