package cache_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
	"unsafe"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache"
	"github.com/berthhq/berth/internal/store/storetest"
)

// lineRecorder is a stream's client that keeps each line written and the array it was
// written from; safe for the stream's goroutine and the test's.
type lineRecorder struct {
	header http.Header
	mu     sync.Mutex
	lines  [][]byte
	arrays []*byte
}

func (r *lineRecorder) Header() http.Header { return r.header }
func (r *lineRecorder) WriteHeader(int)     {}
func (r *lineRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, bytes.Clone(p))
	r.arrays = append(r.arrays, unsafe.SliceData(p))
	return len(p), nil
}
func (r *lineRecorder) Flush()                           {}
func (r *lineRecorder) SetWriteDeadline(time.Time) error { return nil }

func (r *lineRecorder) written() ([][]byte, []*byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lines, r.arrays
}

// Streams of the cache's watchers, running at once, write every change in the same bytes,
// the encoding of the change shared by all of them; the watchers of a node write a
// DELETED of their own for a task group that leaves it, while the watchers of every task
// group write its MODIFIED.
func TestStreamsShareOneLine(t *testing.T) {
	st := cache.SharedStore()
	storetest.Reset(t, st)
	c := cache.New(st, cache.Config{Kind: v4.KindTaskGroup, Logger: storetest.QuietLogger(),
		Indexes: map[string]cache.IndexFunc{"node": func(o v4.Object) string { return o.(*v4.TaskGroup).Spec.Node }}})
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	t.Cleanup(func() { cancel(); running.Wait() })
	running.Go(func() { c.Run(ctx) })
	<-c.Synced()
	stream := func(index, value string) *lineRecorder {
		ch, err := c.Watch(ctx, index, value, 0)
		if err != nil {
			t.Fatal(err)
		}
		r := &lineRecorder{header: http.Header{}}
		running.Go(func() { httpapi.Stream(ctx, r, ch, httpapi.ObjectLine) })
		return r
	}
	var ofNode, ofAll []*lineRecorder
	for range 5 {
		ofNode = append(ofNode, stream("node", "n1"))
		ofAll = append(ofAll, stream("", ""))
	}

	const n = 10
	tgs := store.Typed[*v4.TaskGroup](st, v4.KindTaskGroup)
	bg := context.Background()
	for i := range n {
		if err := tgs.Create(bg, storetest.ProcessTaskGroup("ns", fmt.Sprintf("tg-%d", i), "n1"), store.Raw{}); err != nil {
			t.Fatal(err)
		}
	}
	update := func(name string, edit func(*v4.TaskGroup)) {
		tg, err := tgs.Get(bg, "ns", name)
		if err != nil {
			t.Fatal(err)
		}
		edit(tg)
		if err := tgs.Update(bg, tg, store.Raw{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		update(fmt.Sprintf("tg-%d", i), func(tg *v4.TaskGroup) { tg.Spec.Desired = v4.DesiredStopped })
	}
	update("tg-0", func(tg *v4.TaskGroup) { tg.Spec.Node = "n2" }) // line 2n: DELETED for n1's
	for i := 1; i < n; i++ {
		if _, err := tgs.Delete(bg, "ns", fmt.Sprintf("tg-%d", i), ""); err != nil {
			t.Fatal(err)
		}
	}

	const want = 3 * n
	deadline := time.Now().Add(10 * time.Second)
	for _, r := range append(ofNode, ofAll...) {
		for lines, _ := r.written(); len(lines) < want; lines, _ = r.written() {
			if time.Now().After(deadline) {
				t.Fatalf("a stream wrote %d lines, want %d", len(lines), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	sameAs := func(group []*lineRecorder, what string, own int) {
		first, firstArrays := group[0].written()
		for g, r := range group {
			lines, arrays := r.written()
			if len(lines) != want {
				t.Fatalf("%s stream %d wrote %d lines, want %d", what, g, len(lines), want)
			}
			for i := range lines {
				if !bytes.Equal(lines[i], first[i]) {
					t.Fatalf("%s stream %d, line %d:\n%s\nstream 0 wrote\n%s", what, g, i, lines[i], first[i])
				}
				if i != own && arrays[i] != firstArrays[i] {
					t.Fatalf("%s stream %d encoded line %d itself: %s", what, g, i, lines[i])
				}
			}
		}
	}
	sameAs(ofNode, "node", 2*n)
	sameAs(ofAll, "all", -1)
	nodeLines, _ := ofNode[0].written()
	allLines, _ := ofAll[0].written()
	for i := range want {
		if i != 2*n && !bytes.Equal(nodeLines[i], allLines[i]) {
			t.Fatalf("line %d: the node's watchers wrote\n%s\nthe others\n%s", i, nodeLines[i], allLines[i])
		}
	}
	if !bytes.HasPrefix(nodeLines[2*n], []byte(`{"type":"DELETED"`)) || !bytes.HasPrefix(allLines[2*n], []byte(`{"type":"MODIFIED"`)) {
		t.Fatalf("the move: the node's watchers wrote %s, the others %s", nodeLines[2*n], allLines[2*n])
	}
}
