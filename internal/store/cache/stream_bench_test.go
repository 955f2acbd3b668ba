package cache_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
	"github.com/berthhq/berth/internal/store/storetest"
)

// BenchmarkStreamOneEvent is one change of a task group, from the cache's watch to the
// wire of every stream that watches its node (docs/benchmarks.md, "Watch events
// encoded once"): the cache's fan-out, each watcher's pump and httpapi.Stream.
func BenchmarkStreamOneEvent(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("streams=%d", n), func(b *testing.B) { benchStreams(b, n) })
	}
}

// startFedNodeCache runs a cache of task groups indexed by node, fed by the benchmark
// instead of etcd, until stop (which returns once it stopped); ctx ends with it.
func startFedNodeCache(b *testing.B) (c *cache.Cache, feed chan<- store.Event, ctx context.Context, stop func()) {
	storetest.Reset(b, cache.SharedStore())
	events := make(chan store.Event)
	c = cache.New(cache.SharedStore(), cache.Config{Kind: v4.KindTaskGroup, Logger: storetest.QuietLogger(),
		Indexes: map[string]cache.IndexFunc{"node": func(o v4.Object) string { return o.(*v4.TaskGroup).Spec.Node }}})
	cache.Feed(c, events)
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	running.Go(func() { c.Run(ctx) })
	<-c.Synced()
	return c, events, ctx, func() { cancel(); running.Wait() }
}

func benchStreams(b *testing.B, n int) {
	c, feed, ctx, stop := startFedNodeCache(b)
	var running sync.WaitGroup
	defer func() { stop(); running.Wait() }()
	var written sync.WaitGroup
	for range n {
		ch, err := c.Watch(ctx, "node", "n1", 0)
		if err != nil {
			b.Fatal(err)
		}
		w := &countingWriter{header: http.Header{}, written: &written}
		running.Go(func() { httpapi.Stream(ctx, w, ch, httpapi.ObjectLine) })
	}
	tg := storetest.ProcessTaskGroup("ns", "web-1", "n1")
	tg.Metadata.ResourceVersion = "1"
	rev := c.Rev()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rev++
		written.Add(n)
		feed <- store.Event{Type: store.Modified, Object: tg, Revision: rev, RevisionEnd: true}
		written.Wait()
	}
}

// countingWriter is a stream's client that reads at once: each write (one line) is
// counted done.
type countingWriter struct {
	header  http.Header
	written *sync.WaitGroup
}

func (w *countingWriter) Header() http.Header { return w.header }
func (w *countingWriter) WriteHeader(int)     {}
func (w *countingWriter) Write(p []byte) (int, error) {
	w.written.Done()
	return len(p), nil
}
func (w *countingWriter) Flush()                           {}
func (w *countingWriter) SetWriteDeadline(time.Time) error { return nil }
