package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

// runCache runs a task group cache indexed by node until the test ends or stopCache is
// called; breakWatch ends the cache's watch of the store (it lists again).
func runCache(t *testing.T, history, buffer int) (c *Cache, breakWatch, stopCache func()) {
	t.Helper()
	c = New(testStore, Config{Kind: v4.KindTaskGroup, Indexes: map[string]IndexFunc{"node": byNode},
		History: history, SubscriberBuffer: buffer, Logger: storetest.QuietLogger()})
	var mu sync.Mutex
	var cancelWatch context.CancelFunc
	real := c.watch
	c.watch = func(ctx context.Context, from int64) (<-chan store.Event, error) {
		wctx, cancel := context.WithCancel(ctx)
		mu.Lock()
		cancelWatch = cancel
		mu.Unlock()
		return real(wctx, from)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	stopCache = func() { cancel(); <-done }
	t.Cleanup(stopCache)
	select {
	case <-c.Synced():
	case <-time.After(10 * time.Second):
		t.Fatal("the cache did not sync")
	}
	breakWatch = func() {
		mu.Lock()
		defer mu.Unlock()
		cancelWatch()
	}
	return c, breakWatch, stopCache
}

// holds reports whether the cache still fans changes out to s.
func holds(c *Cache, s *Subscription) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.subs[s.key][s]
	return ok
}

// take takes n events from s, or fewer when it ends first; open is false when it ended.
// It fails when no event comes for a while.
func take(t *testing.T, s *Subscription, n int) (evs []store.Event, open bool) {
	t.Helper()
	for len(evs) < n {
		ev, ok, open := s.Next()
		if ok {
			evs = append(evs, ev)
		}
		if !open {
			return evs, false
		}
		if ok {
			continue
		}
		select {
		case <-s.Ready():
		case <-time.After(10 * time.Second):
			t.Fatalf("no event after %d", len(evs))
		}
	}
	return evs, true
}

// describe is an event as the tests write it: "ADDED a", or "ERROR fell behind".
func describe(ev store.Event) string {
	if ev.Type == store.Error {
		if errors.Is(ev.Err, store.ErrFellBehind) {
			return "ERROR fell behind"
		}
		return fmt.Sprintf("ERROR %v", ev.Err)
	}
	return string(ev.Type) + " " + ev.Object.GetMeta().Name
}

// A subscription serves what Watch serves: the backlog of its node's objects from 0,
// the changes after a revision, and a fell-behind error last when its reader lets more
// than the buffer wait or the cache lists afresh, naming the last revision it had whole.
// Once it ended the cache no longer holds it.
func TestSubscriptionEvents(t *testing.T) {
	for _, tc := range []struct {
		name   string
		buffer int
		before func(t *testing.T) (from int64) // writes before it subscribes
		after  func(t *testing.T, c *Cache, breakWatch func())
		want   []string
		open   bool
	}{{
		name: "backlog from 0, then changes",
		before: func(t *testing.T) int64 {
			create(t, "b", "n1")
			create(t, "a", "n1")
			create(t, "x", "n2")
			return 0
		},
		after: func(t *testing.T, _ *Cache, _ func()) { create(t, "c", "n1"); create(t, "y", "n2") },
		want:  []string{"ADDED a", "ADDED b", "ADDED c"},
		open:  true,
	}, {
		name: "resume after a revision",
		before: func(t *testing.T) int64 {
			create(t, "a", "n1")
			from := storeRev(t)
			create(t, "b", "n1")
			move(t, "a", "n2")
			return from
		},
		after: func(t *testing.T, _ *Cache, _ func()) { remove(t, "b") },
		want:  []string{"ADDED b", "DELETED a", "DELETED b"},
		open:  true,
	}, {
		name:   "a reader that falls behind is cut off",
		buffer: 2,
		before: func(t *testing.T) int64 { create(t, "old", "n1"); return storeRev(t) },
		after: func(t *testing.T, c *Cache, _ func()) {
			for i := range 4 {
				create(t, fmt.Sprintf("t%d", i), "n1")
			}
			caughtUp(t, c) // all four reached it before the reader takes any
		},
		want: []string{"ADDED t0", "ADDED t1", "ERROR fell behind"},
	}, {
		name:   "the cache lists afresh",
		before: func(t *testing.T) int64 { return 0 },
		after: func(t *testing.T, c *Cache, breakWatch func()) {
			create(t, "a", "n1")
			caughtUp(t, c)
			breakWatch()
		},
		want: []string{"ADDED a", "ERROR fell behind"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Reset(t, testStore)
			c, breakWatch, _ := runCache(t, 0, tc.buffer)
			from := tc.before(t)
			caughtUp(t, c)
			s, err := c.Subscribe(context.Background(), "node", "n1", from)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			tc.after(t, c, breakWatch)
			evs, open := take(t, s, len(tc.want))
			var got []string
			for i, ev := range evs {
				got = append(got, describe(ev))
				var fb *store.FellBehindError
				if errors.As(ev.Err, &fb) && i > 0 && fb.Revision != evs[i-1].Revision {
					t.Errorf("resume from %d, want %d (the last event's)", fb.Revision, evs[i-1].Revision)
				}
			}
			if open { // nothing more, once the cache has every write
				caughtUp(t, c)
				if ev, ok, stillOpen := s.Next(); ok || !stillOpen {
					t.Errorf("after the events wanted: %s (open %v)", describe(ev), stillOpen)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || open != tc.open {
				t.Fatalf("got %q (open %v), want %q (open %v)", got, open, tc.want, tc.open)
			}
			if holds(c, s) != tc.open {
				t.Fatalf("the cache holds the subscription: %v, want %v", holds(c, s), tc.open)
			}
		})
	}
}

// However a subscription ends (its context, Close, the cache stopping) the cache forgets
// it, and its reader is told it ended, with nothing after: what was queued is dropped
// when the reader went away, taken when the cache ended it.
func TestSubscriptionEndsAndIsForgotten(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(s *Subscription, cancel context.CancelFunc, stopCache func())
		want []string // the events the reader still takes
	}{
		{"its context ends", func(_ *Subscription, cancel context.CancelFunc, _ func()) { cancel() }, nil},
		{"its reader closes it", func(s *Subscription, _ context.CancelFunc, _ func()) { s.Close() }, nil},
		{"the cache stops", func(_ *Subscription, _ context.CancelFunc, stopCache func()) { stopCache() }, []string{"ADDED a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Reset(t, testStore)
			c, _, stopCache := runCache(t, 0, 0)
			create(t, "a", "n1")
			caughtUp(t, c)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s, err := c.Subscribe(ctx, "node", "n1", 0)
			if err != nil {
				t.Fatal(err)
			}
			if !holds(c, s) {
				t.Fatal("the cache does not hold a new subscription")
			}
			tc.end(s, cancel, stopCache)
			// A context's end reaches it a moment later (context.AfterFunc).
			for deadline := time.Now().Add(10 * time.Second); holds(c, s); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the cache still holds an ended subscription")
				}
			}
			evs, open := take(t, s, 2)
			var got []string
			for _, ev := range evs {
				got = append(got, describe(ev))
			}
			if open || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("after it ended: %q (open %v), want %q", got, open, tc.want)
			}
			if _, ok, open := s.Next(); ok || open {
				t.Fatalf("Next after the end: ok %v open %v", ok, open)
			}
		})
	}
}

// A subscription the cache cannot serve is refused, and nothing of it is kept.
func TestSubscribeRefuses(t *testing.T) {
	storetest.Reset(t, testStore)
	c, _, _ := runCache(t, 2, 0)
	old := storeRev(t)
	for i := range 4 {
		create(t, fmt.Sprintf("t%d", i), "n1")
	}
	caughtUp(t, c)
	for _, tc := range []struct {
		name, index string
		from        int64
		want        error
	}{
		{"a negative revision", "node", -1, store.ErrInvalid},
		{"no such index", "owner", 0, nil},
		{"before the history", "node", old, store.ErrCompacted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := c.Subscribe(context.Background(), tc.index, "n1", tc.from)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("got %v, %v; want an error (%v)", s, err, tc.want)
			}
			c.mu.RLock()
			defer c.mu.RUnlock()
			if len(c.subs) != 0 {
				t.Fatalf("the cache holds %d subscriptions' keys", len(c.subs))
			}
		})
	}
}
