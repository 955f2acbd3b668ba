package cache

import (
	"context"
	"fmt"

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
// them for index ""), after revision after.
type subscriber struct {
	index, value string
	after        int64
	ch           chan store.Event
	buffer       int
	closed       bool
	done         chan struct{}
}

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
	c.mu.Lock()
	if index != "" {
		if _, ok := c.index[index]; !ok {
			c.mu.Unlock()
			return nil, fmt.Errorf("watch %s: no index %q", c.cfg.Kind, index)
		}
	}
	if from > 0 && from < c.history.start {
		start := c.history.start
		c.mu.Unlock()
		return nil, fmt.Errorf("watch %s from %d: %w (this server keeps the changes since %d)", c.cfg.Kind, from, store.ErrCompacted, start)
	}
	s := &subscriber{index: index, value: value, after: max(from, c.rev), buffer: c.cfg.SubscriberBuffer, done: make(chan struct{})}
	var backlog []store.Event
	if from == 0 {
		// Only the value's objects, from the index: a node's agent does not scan them all.
		add := func(o v4.Object) {
			backlog = append(backlog, store.Event{Type: store.Added, Object: o, Revision: c.rev})
		}
		if index == "" {
			for _, o := range c.objs {
				add(o)
			}
		} else {
			for key := range c.index[index][value] {
				add(c.objs[key])
			}
		}
	} else {
		c.history.since(from, func(ch change) {
			if ev, ok := s.filter(c, ch); ok {
				backlog = append(backlog, ev)
			}
		})
	}
	s.ch = make(chan store.Event, len(backlog)+s.buffer+1)
	for _, ev := range backlog {
		s.ch <- ev
	}
	c.subs[s] = struct{}{}
	c.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
			c.mu.Lock()
			c.drop(s)
			c.mu.Unlock()
		case <-s.done:
		}
	}()
	return s.ch, nil
}

// matches reports whether o has the subscriber's index value; c.mu is held.
func (s *subscriber) matches(c *Cache, o v4.Object) bool {
	return o != nil && (s.index == "" || c.cfg.Indexes[s.index](o) == s.value)
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

// deliver sends a change to a subscriber without ever blocking the cache; c.mu is held.
func (c *Cache) deliver(s *subscriber, ch change) {
	if ch.ev.Revision <= s.after {
		return
	}
	ev, ok := s.filter(c, ch)
	if !ok {
		return
	}
	if len(s.ch) >= cap(s.ch)-1 {
		c.cut(s, &store.FellBehindError{Revision: s.after, Events: len(s.ch)})
		return
	}
	s.ch <- ev
	s.after = ev.Revision
}

// cut ends a subscriber with an error event; c.mu is held.
func (c *Cache) cut(s *subscriber, err error) {
	if !s.closed {
		s.ch <- store.Event{Type: store.Error, Err: err, Revision: s.after}
	}
	c.drop(s)
}

// drop closes a subscriber's channel and forgets it; c.mu is held.
func (c *Cache) drop(s *subscriber) {
	if s.closed {
		return
	}
	s.closed = true
	close(s.ch)
	close(s.done)
	delete(c.subs, s)
}

// cutAll ends every watcher: the cache lists afresh and cannot tell them what changed
// while its watch was down; they list again. c.mu is held.
func (c *Cache) cutAll() {
	for s := range c.subs {
		c.cut(s, &store.FellBehindError{Revision: s.after})
	}
}

// closeAll closes every watcher when Run returns.
func (c *Cache) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for s := range c.subs {
		c.drop(s)
	}
}
