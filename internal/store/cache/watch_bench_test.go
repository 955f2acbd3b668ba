package cache_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
	"github.com/berthhq/berth/internal/store/storetest"
)

// watchers is how many watches BenchmarkWatchMemory opens: one per node, as agents do.
const watchers = 2000

// BenchmarkWatchMemory is what one agent's task group watch holds in the cache, idle and
// after it took one change (docs/benchmarks.md, "Memory per agent watch"): a Watch (a
// subscription and the goroutine that pumps it to a channel) against a Subscription
// that its reader takes events from. It reports per watch the goroutines, the bytes of
// goroutine stacks and the live heap bytes, over watchers watches of distinct nodes;
// the reader (the stream's handler) is not counted, it is the same for both.
func BenchmarkWatchMemory(b *testing.B) {
	for _, kind := range []string{"watch", "subscription"} {
		for _, changed := range []bool{false, true} {
			state := "idle"
			if changed {
				state = "one-change-taken"
			}
			b.Run(fmt.Sprintf("%s/%s", kind, state), func(b *testing.B) { benchWatchMemory(b, kind == "watch", changed) })
		}
	}
}

func benchWatchMemory(b *testing.B, channel, changed bool) {
	c, feed, _, stop := startFedNodeCache(b)
	defer stop()
	// One task group per node, in the cache before the watches start (agents list, then
	// watch from the list's revision): a change of each re-sends the same object.
	groups := make([]*v4.TaskGroup, watchers)
	rev := c.Rev()
	send := func() {
		for _, tg := range groups {
			rev++
			feed <- store.Event{Type: store.Modified, Object: tg, Revision: rev, RevisionEnd: true}
		}
	}
	for i := range groups {
		groups[i] = storetest.ProcessTaskGroup("ns", fmt.Sprintf("tg-%d", i), fmt.Sprintf("n%d", i))
	}
	send()
	var goroutines, stack, heap float64
	for b.Loop() {
		before := measure()
		var w watches
		if channel {
			w = openWatches(b, c, rev)
		} else {
			w = openSubscriptions(b, c, rev)
		}
		if changed {
			send()
			w.take(b)
		}
		after := measure()
		goroutines = float64(after.goroutines-before.goroutines) / watchers
		stack = float64(int64(after.stack)-int64(before.stack)) / watchers // it may shrink
		heap = float64(int64(after.heap)-int64(before.heap)) / watchers
		w.close()
	}
	b.ReportMetric(goroutines, "goroutines/watch")
	b.ReportMetric(stack, "stack-B/watch")
	b.ReportMetric(heap, "heap-B/watch")
}

// usage is what the process holds at one moment, after a collection.
type usage struct {
	goroutines int
	stack      uint64
	heap       uint64
}

func measure() usage {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return usage{goroutines: runtime.NumGoroutine(), stack: m.StackInuse, heap: m.HeapAlloc}
}

// watches is one way of watching every node: take takes one event of each, close ends
// them all and returns once they are gone.
type watches struct {
	take  func(b *testing.B)
	close func()
}

func openWatches(b *testing.B, c *cache.Cache, rev int64) watches {
	ctx, cancel := context.WithCancel(context.Background())
	chs := make([]<-chan store.Event, watchers)
	for i := range chs {
		ch, err := c.Watch(ctx, "node", fmt.Sprintf("n%d", i), rev)
		if err != nil {
			b.Fatal(err)
		}
		chs[i] = ch
	}
	return watches{
		take: func(b *testing.B) {
			for _, ch := range chs {
				if ev := <-ch; ev.Type != store.Modified {
					b.Fatalf("a watch got %s %v", ev.Type, ev.Err)
				}
			}
		},
		close: func() {
			cancel()
			for _, ch := range chs {
				for range ch { // closed once its pump is done
				}
			}
		},
	}
}

func openSubscriptions(b *testing.B, c *cache.Cache, rev int64) watches {
	ctx, cancel := context.WithCancel(context.Background()) // its end is registered, as a request's is
	subs := make([]*cache.Subscription, watchers)
	for i := range subs {
		s, err := c.Subscribe(ctx, "node", fmt.Sprintf("n%d", i), rev)
		if err != nil {
			b.Fatal(err)
		}
		subs[i] = s
	}
	return watches{
		take: func(b *testing.B) {
			for _, s := range subs {
				<-s.Ready()
				if ev, ok, _ := s.Next(); !ok || ev.Type != store.Modified {
					b.Fatalf("a subscription got %v %s %v", ok, ev.Type, ev.Err)
				}
			}
		},
		close: func() {
			for _, s := range subs {
				s.Close()
			}
			cancel()
		},
	}
}
