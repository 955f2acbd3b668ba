package cache

import (
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// change is one event of the watch, with the object as it was before (nil when new), so a
// watcher of one index value also hears of an object that left it; at is when the cache
// applied it.
type change struct {
	ev  store.Event
	old v4.Object
	at  time.Time
}

// ring keeps the last changes, at most len(buf) of them and none older than the
// cache's HistoryAge: a burst of 10,000 changes is not held (with the objects it
// names) for as long as the server then stays idle. start is the revision from which
// it holds every change: a watch from a revision at or after start is served from it.
//
// Its buffer grows with the changes it holds, up to max, and is given back once the
// history is empty again: a kind that seldom changes (most of them) holds a few
// changes' worth of memory, not max's (16,384 slots: 1.7 MB a kind).
type ring struct {
	buf   []change
	head  int // the oldest change
	n     int
	max   int
	start int64
}

// minRing is the buffer a ring starts with once it holds a change.
const minRing = 64

func newRing(size int, start int64) ring { return ring{max: max(size, 1), start: start} }

func (r *ring) add(ch change) {
	if r.n == len(r.buf) {
		if len(r.buf) < r.max {
			r.grow()
		} else {
			r.drop()
		}
	}
	r.buf[(r.head+r.n)%len(r.buf)] = ch
	r.n++
}

// grow doubles the buffer (at least minRing, at most max), oldest change first.
func (r *ring) grow() {
	buf := make([]change, min(max(2*len(r.buf), minRing), r.max))
	for i := range r.n {
		buf[i] = r.buf[(r.head+i)%len(r.buf)]
	}
	r.buf, r.head = buf, 0
}

// drop forgets the oldest change: from its revision on, all is here.
func (r *ring) drop() {
	r.start = r.buf[r.head].ev.Revision
	r.buf[r.head] = change{} // its objects may go
	r.head = (r.head + 1) % len(r.buf)
	r.n--
}

// expire forgets the changes applied before t, and says how many it forgot.
func (r *ring) expire(t time.Time) int {
	dropped := 0
	for r.n > 0 && r.buf[r.head].at.Before(t) {
		r.drop()
		dropped++
	}
	if r.n == 0 {
		r.buf, r.head = nil, 0 // what a burst grew goes with it
	}
	return dropped
}

// since calls fn with every change after rev, oldest first.
func (r *ring) since(rev int64, fn func(change)) {
	for i := range r.n {
		if ch := r.buf[(r.head+i)%len(r.buf)]; ch.ev.Revision > rev {
			fn(ch)
		}
	}
}

// expireHistory forgets the changes older than the history's age.
func (c *Cache) expireHistory() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.history.expire(time.Now().Add(-c.cfg.HistoryAge))
}
