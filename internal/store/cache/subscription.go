package cache

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/berthhq/berth/internal/store"
)

// Subscription is one watch of a cache that its reader takes events from, with no
// goroutine of its own: the reader waits on Ready and takes what is queued with Next.
// It is a watch of the changes of the objects whose index value is value (all of them
// for index ""), after revision from. Its queue grows as changes wait for the reader,
// up to the subscriber buffer, and is released as it drains: thousands of idle agents'
// watches hold no preallocated buffer each (a few events' room at most, eventQueue).
// Watch serves the same events on a channel, through a goroutine of its own.
type Subscription struct {
	c   *Cache
	key subKey
	// from: changes up to it are not the watcher's (it asked for those after it, or has
	// them in its initial backlog). last is the revision of the last change queued, whole
	// the last revision queued whole, where a watcher cut off resumes. c.mu is held to
	// read or write them.
	from, last, whole int64
	buffer            int
	wake              chan struct{} // a change was queued, or the subscription ended

	mu     sync.Mutex
	limit  int // the queue's bound: buffer, plus the initial backlog until it is taken
	queue  eventQueue
	end    *store.Event // taken after the queue, when the cache cut the subscription off
	closed bool         // nothing more is queued: Next reports the end once the queue is taken
	stop   func() bool  // stops Close from running when ctx ends (Subscribe)
}

// subKey is what a subscription listens to: one value of one index ("" for all objects).
type subKey struct{ index, value string }

// Subscribe starts a watch of the changes of the objects whose index value is value
// (index "": all), with the semantics of Watch: from 0 it first queues an ADDED event
// for each of them, then the changes; from a revision it queues the changes after it,
// or fails with store.ErrCompacted when the cache no longer holds them (list again). An
// object that leaves the value is queued as DELETED. A reader that falls more than the
// subscriber buffer behind gets a store.Error event (a *store.FellBehindError) last. It
// ends then, when the cache lists afresh (a fell-behind error too: its watch broke),
// when the cache stops, and when ctx ends or the reader calls Close; the cache forgets
// it then.
func (c *Cache) Subscribe(ctx context.Context, index, value string, from int64) (*Subscription, error) {
	s, err := c.subscribe(index, value, from)
	if err != nil {
		return nil, err
	}
	// No goroutine waits for ctx: context.AfterFunc starts one only once ctx ends.
	stop := context.AfterFunc(ctx, s.Close)
	s.mu.Lock()
	s.stop = stop
	s.mu.Unlock()
	return s, nil
}

// subscribe registers a subscription and queues its backlog.
func (c *Cache) subscribe(index, value string, from int64) (*Subscription, error) {
	if from < 0 {
		return nil, fmt.Errorf("watch %s: %w: negative revision %d", c.cfg.Kind, store.ErrInvalid, from)
	}
	if index == "" {
		value = ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if index != "" {
		if _, ok := c.index[index]; !ok {
			return nil, fmt.Errorf("watch %s: no index %q", c.cfg.Kind, index)
		}
	}
	if from > 0 && from < c.history.start {
		return nil, fmt.Errorf("watch %s from %d: %w (this server keeps the changes since %d)", c.cfg.Kind, from, store.ErrCompacted, c.history.start)
	}
	after := max(from, c.rev)
	s := &Subscription{c: c, key: subKey{index, value}, from: after, last: after, whole: after,
		buffer: c.cfg.SubscriberBuffer, wake: make(chan struct{}, 1)}
	if from == 0 {
		// Only the value's objects, from the index: a node's agent does not scan them all.
		// In key order, as a store watch lists them.
		var keys []string
		if index == "" {
			keys = slices.Collect(maps.Keys(c.objs))
		} else {
			keys = slices.Collect(maps.Keys(c.index[index][value]))
		}
		slices.Sort(keys)
		s.queue.items = make([]store.Event, 0, len(keys))
		for _, key := range keys {
			s.queue.push(store.Event{Type: store.Added, Object: c.objs[key], Revision: c.rev})
		}
	} else {
		c.history.since(from, func(ch change) {
			if ev, ok := s.filter(c, ch); ok {
				s.queue.push(ev)
			}
		})
	}
	s.limit = s.queue.len() + s.buffer
	set := c.subs[s.key]
	if set == nil {
		set = map[*Subscription]struct{}{}
		c.subs[s.key] = set
	}
	set[s] = struct{}{}
	if s.queue.len() > 0 {
		s.poke()
	}
	return s, nil
}

// Ready receives when events may be queued or the subscription has ended: the reader
// then calls Next until it reports nothing queued. A wake may find nothing new.
func (s *Subscription) Ready() <-chan struct{} { return s.wake }

// Next takes the oldest queued event without blocking. ok is false when none is queued;
// open is false once the subscription has ended and nothing follows (an event taken
// with it is the last: the fell-behind error when the cache cut it off).
func (s *Subscription) Next() (ev store.Event, ok, open bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queue.len() > 0 {
		ev = s.queue.pop()
		if s.queue.len() == 0 {
			s.queue.drained() // the backing array of a burst goes
			s.limit = s.buffer
		}
		return ev, true, !s.closed || s.queue.len() > 0 || s.end != nil
	}
	if !s.closed {
		return store.Event{}, false, true
	}
	if s.end != nil {
		ev, s.end = *s.end, nil
		return ev, true, false
	}
	return store.Event{}, false, false
}

// Close ends the subscription: the cache forgets it, and what it queued is dropped
// (Next reports the end). Calling it again, or after the cache ended it, does nothing
// more.
func (s *Subscription) Close() {
	s.c.mu.Lock()
	s.c.drop(s)
	s.mu.Lock() // with c.mu: no change is queued between the drop and this
	s.queue = eventQueue{}
	s.end = nil
	stop := s.stop
	s.mu.Unlock()
	s.c.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// push queues an event for the subscription; false when its queue is full.
func (s *Subscription) push(ev store.Event) bool {
	s.mu.Lock()
	if s.queue.len() >= s.limit {
		s.mu.Unlock()
		return false
	}
	s.queue.push(ev)
	s.mu.Unlock()
	s.poke()
	return true
}

// poke wakes the reader without ever blocking.
func (s *Subscription) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
