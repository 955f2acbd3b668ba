package cache

import (
	"context"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// Watch streams the changes of the objects whose index value is value (index "": all),
// as store.Watch does: from 0 it first sends an ADDED event for each of them, then the
// changes; from a revision it sends the changes after it, or fails with
// store.ErrCompacted when the cache no longer holds them (list again). An object that
// leaves the value (its node changes) is sent as DELETED. A watcher that falls more
// than the subscriber buffer behind gets a store.Error event (a *store.FellBehindError)
// last; the channel is closed then, when ctx ends, and when the cache lists afresh (its
// watch broke). It is a Subscription read by a goroutine of its own (pump), which a
// reader that can wait on the subscription itself does without (Subscribe).
func (c *Cache) Watch(ctx context.Context, index, value string, from int64) (<-chan store.Event, error) {
	s, err := c.subscribe(index, value, from)
	if err != nil {
		return nil, err
	}
	out := make(chan store.Event)
	go pump(ctx, s, out)
	return out, nil
}

// pump sends the subscription's events to out, one at a time, until the subscription
// ends or ctx does; it then closes the subscription and out.
func pump(ctx context.Context, s *Subscription, out chan<- store.Event) {
	defer close(out)
	defer s.Close()
	for {
		ev, ok, open := s.Next()
		if !ok {
			if !open {
				return
			}
			select {
			case <-s.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		select {
		case out <- ev:
		case <-ctx.Done():
			return
		}
		if !open {
			return
		}
	}
}

// matches reports whether o has the subscription's index value; c.mu is held.
func (s *Subscription) matches(c *Cache, o v4.Object) bool {
	return o != nil && (s.key.index == "" || c.cfg.Indexes[s.key.index](o) == s.key.value)
}

// filter turns a change into the subscription's event: as it is when the object has the
// value, DELETED when it had it before and no longer does, nothing otherwise.
func (s *Subscription) filter(c *Cache, ch change) (store.Event, bool) {
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
// subscription: five thousand agents' watches cost nothing to a change of another node's
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

// deliver queues a change for a subscription without ever blocking the cache; c.mu is held.
func (c *Cache) deliver(s *Subscription, ch change) {
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

// cut ends a subscription with an error event, sent after what it has queued; c.mu is held.
func (c *Cache) cut(s *Subscription, err error) {
	s.mu.Lock()
	if !s.closed {
		s.end = &store.Event{Type: store.Error, Err: err, Revision: s.whole}
	}
	s.mu.Unlock()
	c.drop(s)
}

// drop closes a subscription (its reader takes what is queued, then the end) and
// forgets it; c.mu is held.
func (c *Cache) drop(s *Subscription) {
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
