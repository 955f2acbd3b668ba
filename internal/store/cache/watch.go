package cache

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// change is one event of the watch, with the object as it was before (nil when new), so a
// watcher of one index value also hears of an object that left it.
type change struct {
	ev  store.Event
	old v4.Object
}

// ring keeps the last changes. start is the revision from which it holds every change:
// a watch from a revision at or after start is served from it.
type ring struct {
	buf   []change
	next  int
	full  bool
	start int64
}

func newRing(size int, start int64) ring { return ring{buf: make([]change, size), start: start} }

func (r *ring) add(ch change) {
	if r.full {
		r.start = r.buf[r.next].ev.Revision // the oldest goes: from its revision on, all is here
	}
	r.buf[r.next] = ch
	r.next = (r.next + 1) % len(r.buf)
	if r.next == 0 {
		r.full = true
	}
}

// since calls fn with every change after rev, oldest first.
func (r *ring) since(rev int64, fn func(change)) {
	n, first := r.next, 0
	if r.full {
		n, first = len(r.buf), r.next
	}
	for i := range n {
		ch := r.buf[(first+i)%len(r.buf)]
		if ch.ev.Revision > rev {
			fn(ch)
		}
	}
}

// subscriber is one watch: the changes of the objects whose index value is value (all of
// them for index ""), after revision after. Its queue grows as changes wait for the
// watcher, up to buffer, and is released as it drains: thousands of idle agents' watches
// hold no preallocated buffer each (a few events' room at most, eventQueue). A goroutine
// of its own (pump) hands the queue to the watcher's channel.
type subscriber struct {
	key subKey
	// from: changes up to it are not the watcher's (it asked for those after it, or has
	// them in its initial backlog). last is the revision of the last change queued, whole
	// the last revision queued whole, where a watcher cut off resumes. c.mu is held to
	// read or write them.
	from, last, whole int64
	buffer            int
	limit             int // the queue's bound: buffer, plus the initial backlog until it is sent
	out               chan store.Event
	wake              chan struct{} // a change was queued, or the subscriber was closed

	mu     sync.Mutex
	queue  eventQueue
	end    *store.Event // sent after the queue, when it was cut off
	closed bool         // nothing more is queued: the pump closes out once the queue is sent
}

// subKey is what a subscriber listens to: one value of one index ("" for all objects).
type subKey struct{ index, value string }

// Watch streams the changes of the objects whose index value is value (index "": all),
// as store.Watch does: from 0 it first sends an ADDED event for each of them, then the
// changes; from a revision it sends the changes after it, or fails with
// store.ErrCompacted when the cache no longer holds them (list again). An object that
// leaves the value (its node changes) is sent as DELETED. A watcher that falls more
// than the subscriber buffer behind gets a store.Error event (a *store.FellBehindError)
// last; the channel is closed then, when ctx ends, and when the cache lists afresh (its
// watch broke).
func (c *Cache) Watch(ctx context.Context, index, value string, from int64) (<-chan store.Event, error) {
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
	s := &subscriber{key: subKey{index, value}, from: after, last: after, whole: after, buffer: c.cfg.SubscriberBuffer,
		out: make(chan store.Event), wake: make(chan struct{}, 1)}
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
		set = map[*subscriber]struct{}{}
		c.subs[s.key] = set
	}
	set[s] = struct{}{}
	go c.pump(ctx, s)
	return s.out, nil
}

// pump sends the subscriber's queue to its channel until the subscriber is closed and
// its queue sent, or ctx ends.
func (c *Cache) pump(ctx context.Context, s *subscriber) {
	defer close(s.out)
	for {
		s.mu.Lock()
		if s.queue.len() == 0 {
			s.queue.drained() // the backing array of a burst goes
			s.limit = s.buffer
			if s.closed {
				end := s.end
				s.mu.Unlock()
				if end != nil {
					select {
					case s.out <- *end:
					case <-ctx.Done():
					}
				}
				return
			}
			s.mu.Unlock()
			select {
			case <-s.wake:
				continue
			case <-ctx.Done():
				c.mu.Lock()
				c.drop(s)
				c.mu.Unlock()
				return
			}
		}
		ev := s.queue.pop()
		s.mu.Unlock()
		select {
		case s.out <- ev:
		case <-ctx.Done():
			c.mu.Lock()
			c.drop(s)
			c.mu.Unlock()
			return
		}
	}
}

// push queues an event for the subscriber; false when its queue is full.
func (s *subscriber) push(ev store.Event) bool {
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

// poke wakes the pump without ever blocking.
func (s *subscriber) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// matches reports whether o has the subscriber's index value; c.mu is held.
func (s *subscriber) matches(c *Cache, o v4.Object) bool {
	return o != nil && (s.key.index == "" || c.cfg.Indexes[s.key.index](o) == s.key.value)
}

// filter turns a change into the subscriber's event: as it is when the object has the
// value, DELETED when it had it before and no longer does, nothing otherwise.
func (s *subscriber) filter(c *Cache, ch change) (store.Event, bool) {
	switch {
	case s.matches(c, ch.ev.Object):
		return ch.ev, true
	case ch.ev.Type != store.Deleted && s.matches(c, ch.old):
		ev := ch.ev
		ev.Type = store.Deleted
		return ev, true
	}
	return store.Event{}, false
}

// fanOut hands a change to the subscribers it may concern: those of every object, and
// those of its index values before and after the change (a change scans no other
// subscriber: five thousand agents' watches cost nothing to a change of another node's
// task group). c.mu is held.
func (c *Cache) fanOut(ch change) {
	c.share(&ch)
	for s := range c.subs[subKey{}] {
		c.deliver(s, ch)
	}
	for name, fn := range c.cfg.Indexes {
		var now, before string
		if ch.ev.Object != nil {
			now = fn(ch.ev.Object)
			for s := range c.subs[subKey{name, now}] {
				c.deliver(s, ch)
			}
		}
		if ch.old != nil {
			if before = fn(ch.old); before != now {
				for s := range c.subs[subKey{name, before}] {
					c.deliver(s, ch)
				}
			}
		}
	}
}

// share gives the change's event a wire line that its watchers share, encoded by the
// first stream that sends it (store.Event.Share), when two watchers or more may send it
// as it is: those of every object and those of its index values now. A single watcher
// encodes its own, as it did, without a copy of the line; the history keeps none
// either (the change is shared after it is recorded), so a line is held only while it
// is being sent. c.mu is held.
func (c *Cache) share(ch *change) {
	if ch.ev.Object == nil {
		return
	}
	n := len(c.subs[subKey{}])
	for name, fn := range c.cfg.Indexes {
		if n > 1 {
			break
		}
		n += len(c.subs[subKey{name, fn(ch.ev.Object)}])
	}
	if n > 1 {
		ch.ev.Share()
	}
}

// deliver queues a change for a subscriber without ever blocking the cache; c.mu is held.
func (c *Cache) deliver(s *subscriber, ch change) {
	if ch.ev.Revision <= s.from {
		return
	}
	ev, ok := s.filter(c, ch)
	if !ok {
		return
	}
	if ev.Revision > s.last {
		s.whole = s.last // the changes of a revision come together: the one before is whole
	}
	if !s.push(ev) {
		c.cut(s, &store.FellBehindError{Revision: s.whole, Events: s.buffer})
		return
	}
	s.last = ev.Revision
}

// cut ends a subscriber with an error event, sent after what it has queued; c.mu is held.
func (c *Cache) cut(s *subscriber, err error) {
	s.mu.Lock()
	if !s.closed {
		s.end = &store.Event{Type: store.Error, Err: err, Revision: s.whole}
	}
	s.mu.Unlock()
	c.drop(s)
}

// drop closes a subscriber (its pump sends what is queued, then closes its channel) and
// forgets it; c.mu is held.
func (c *Cache) drop(s *subscriber) {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.poke()
	if set := c.subs[s.key]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(c.subs, s.key)
		}
	}
}

// cutAll ends every watcher: the cache lists afresh and cannot tell them what changed
// while its watch was down; they list again. c.mu is held.
func (c *Cache) cutAll() {
	for _, set := range c.subs {
		for s := range set {
			s.whole = s.last // changes are applied a revision at a time: all it has is whole
			c.cut(s, &store.FellBehindError{Revision: s.last})
		}
	}
}

// closeAll closes every watcher when Run returns.
func (c *Cache) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, set := range c.subs {
		for s := range set {
			c.drop(s)
		}
	}
}
