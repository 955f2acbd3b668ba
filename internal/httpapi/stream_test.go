package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// recorder is a stream's client: it keeps what each write gave it.
type recorder struct {
	header  http.Header
	writes  [][]byte
	arrays  []*byte // the array each write's bytes were in
	flushes int
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(int)     {}
func (r *recorder) Write(p []byte) (int, error) {
	r.writes = append(r.writes, bytes.Clone(p))
	r.arrays = append(r.arrays, unsafe.SliceData(p))
	return len(p), nil
}
func (r *recorder) Flush()                           { r.flushes++ }
func (r *recorder) SetWriteDeadline(time.Time) error { return nil }

// stream runs Stream of evs with line on n recorders at once, each its own goroutine.
func stream(t *testing.T, n int, line func(store.Event) any, evs ...store.Event) []*recorder {
	t.Helper()
	var wg sync.WaitGroup
	recs := make([]*recorder, n)
	for i := range recs {
		recs[i] = newRecorder()
		ch := make(chan store.Event, len(evs))
		for _, ev := range evs {
			ch <- ev
		}
		close(ch)
		wg.Go(func() { Stream(t.Context(), recs[i], ch, line) })
	}
	wg.Wait()
	return recs
}

// encoded is a line as a json.Encoder writes it, as every stream did before lines were
// shared.
func encoded(t *testing.T, typ store.EventType, o v4.Object) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v4.WatchLine[v4.Object]{Type: string(typ), Object: o}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func secret() *v4.Secret {
	return &v4.Secret{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindSecret},
		Metadata: v4.ObjectMeta{Namespace: "ns", Name: "db", ResourceVersion: "7"},
		Datas:    map[string]v4.SecretData{"password": {Content: "c2VjcmV0LXZhbHVl"}, "note": {Content: "<a&b>"}}}
}

// Streams of one shared event write the same bytes, from the same array (encoded once),
// and those bytes are what a stream encoding the event itself writes, as each stream of
// an event that is not shared does.
func TestStreamsWriteOneSharedLine(t *testing.T) {
	ev := store.Event{Type: store.Modified, Object: secret(), Revision: 7}
	want := encoded(t, store.Modified, ev.Object)
	own := stream(t, 2, ObjectLine, ev)
	ev.Share()
	shared := stream(t, 8, ObjectLine, ev)
	for i, r := range append(own, shared...) {
		if len(r.writes) != 1 || !bytes.Equal(r.writes[0], want) {
			t.Fatalf("stream %d wrote %q, want %q", i, r.writes, want)
		}
	}
	for i, r := range shared {
		if r.arrays[0] != shared[0].arrays[0] {
			t.Fatalf("stream %d wrote a line of its own, not the shared one", i)
		}
	}
}

// A line function that sends the event's object otherwise (a secret without its values,
// as a keysOnly watch sends it) or as another type (DELETED for an object that left a
// watcher's index value) gets its own line, never the shared line of the original.
func TestChangedEventsGetTheirOwnLine(t *testing.T) {
	ev := store.Event{Type: store.Modified, Object: secret(), Revision: 7}
	ev.Share()
	keysOnly := func(ev store.Event) any {
		s := *ev.Object.(*v4.Secret)
		s.Datas = map[string]v4.SecretData{"password": {}, "note": {}}
		ev.Object = &s
		return ObjectLine(ev)
	}
	deleted := func(ev store.Event) any {
		ev.Type = store.Deleted
		return ObjectLine(ev)
	}
	// The shared line is encoded first, so that a changed event could only miss it.
	for _, r := range stream(t, 1, ObjectLine, ev) {
		if !strings.Contains(string(r.writes[0]), "c2VjcmV0LXZhbHVl") {
			t.Fatalf("the full stream wrote %s", r.writes[0])
		}
	}
	for _, r := range stream(t, 4, keysOnly, ev) {
		if l := string(r.writes[0]); strings.Contains(l, "c2VjcmV0LXZhbHVl") || !strings.Contains(l, `"password"`) {
			t.Fatalf("a keysOnly stream wrote %s, want the keys without the values", l)
		}
	}
	for _, r := range stream(t, 2, deleted, ev) {
		if want := encoded(t, store.Deleted, ev.Object); !bytes.Equal(r.writes[0], want) {
			t.Fatalf("a DELETED stream wrote %s, want %s", r.writes[0], want)
		}
	}
}

// The error that ends a stream is its own line, whatever the event carries.
func TestStreamErrorLine(t *testing.T) {
	ev := store.Event{Type: store.Error, Err: &store.FellBehindError{Revision: 9}, Revision: 9}
	ev.Share()
	r := stream(t, 1, ObjectLine, ev)[0]
	var l v4.WatchErrorLine
	if err := json.Unmarshal(r.writes[0], &l); err != nil || l.Type != string(store.Error) || l.ResourceVersion != "9" {
		t.Fatalf("wrote %s (%v), want an ERROR line naming revision 9", r.writes[0], err)
	}
}
