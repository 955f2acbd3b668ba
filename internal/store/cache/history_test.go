package cache

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

// The ring keeps the last len(buf) changes and none older than asked; start says from
// which revision on it holds every change.
func TestRingBoundsAndAge(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(rev int64) change {
		return change{ev: store.Event{Revision: rev}, at: t0.Add(time.Duration(rev) * time.Second)}
	}
	revs := func(r *ring, from int64) []int64 {
		var out []int64
		r.since(from, func(ch change) { out = append(out, ch.ev.Revision) })
		return out
	}
	r := newRing(3, 10)
	for rev := int64(11); rev <= 14; rev++ {
		r.add(at(rev))
	}
	if got := revs(&r, 0); len(got) != 3 || got[0] != 12 || r.start != 11 {
		t.Fatalf("after 4 adds to 3 slots: %v, start %d", got, r.start)
	}
	if n := r.expire(t0.Add(13 * time.Second)); n != 1 || r.start != 12 {
		t.Fatalf("expired %d, start %d", n, r.start)
	}
	held := 0
	for _, ch := range r.buf {
		if ch.ev.Revision != 0 {
			held++
		}
	}
	if held != r.n {
		t.Fatalf("%d slots hold a change, %d are the history's: an expired change keeps its objects", held, r.n)
	}
	if got := revs(&r, 12); len(got) != 2 || got[0] != 13 {
		t.Fatalf("since 12: %v", got)
	}
	if n := r.expire(t0.Add(time.Hour)); n != 2 || r.n != 0 || r.start != 14 {
		t.Fatalf("expired %d, %d left, start %d", n, r.n, r.start)
	}
	if r.buf != nil {
		t.Fatal("an expired history still holds its buffer (and the objects in it)")
	}
	r.add(at(15))
	if got := revs(&r, 14); len(got) != 1 || got[0] != 15 {
		t.Fatalf("after expiry, since 14: %v", got)
	}
}

// A cache forgets changes older than its HistoryAge even when nothing else changes: a
// watch from before them lists again, one from now is served.
func TestCacheHistoryExpiresWhenIdle(t *testing.T) {
	storetest.Reset(t, testStore)
	c := startCacheWith(t, Config{HistoryAge: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	from := c.Rev()
	create(t, "a", "n1")
	caughtUp(t, c)
	ch, err := c.Watch(ctx, "node", "n1", from)
	if err != nil {
		t.Fatalf("a watch from a moment ago: %v", err)
	}
	if ev := next(t, ch); ev.Object.GetMeta().Name != "a" {
		t.Fatalf("got %s", ev.Object.GetMeta().Name)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := c.Watch(ctx, "node", "n1", from)
		if errors.Is(err, store.ErrCompacted) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the history still serves a watch from before an expired change: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := c.Watch(ctx, "node", "n1", c.Rev()); err != nil {
		t.Fatalf("a watch from now: %v", err)
	}
}

// The ring's buffer grows with what it holds, keeps the order across growths and
// wraps, and is given back once everything expired.
func TestRingGrowsAndShrinks(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := newRing(1000, 0)
	if r.buf != nil {
		t.Fatal("an empty ring holds a buffer")
	}
	for rev := int64(1); rev <= 100; rev++ {
		r.add(change{ev: store.Event{Revision: rev}, at: t0})
		if rev == 80 {
			r.expire(t0.Add(-time.Second)) // nothing older: nothing goes
		}
	}
	if len(r.buf) != 128 || r.n != 100 {
		t.Fatalf("100 changes: buffer %d, held %d", len(r.buf), r.n)
	}
	var last int64
	r.since(0, func(ch change) {
		if ch.ev.Revision != last+1 {
			t.Fatalf("revision %d after %d", ch.ev.Revision, last)
		}
		last = ch.ev.Revision
	})
	if last != 100 {
		t.Fatalf("since 0 ended at %d", last)
	}
	small := newRing(3, 0)
	for rev := int64(1); rev <= 7; rev++ {
		small.add(change{ev: store.Event{Revision: rev}, at: t0})
	}
	if len(small.buf) != 3 || small.start != 4 {
		t.Fatalf("bounded ring: buffer %d, start %d", len(small.buf), small.start)
	}
	if r.expire(t0.Add(time.Second)); r.buf != nil || r.start != 100 {
		t.Fatalf("after everything expired: buffer %d, start %d", len(r.buf), r.start)
	}
}
