package client

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// streamServer writes lines as NDJSON, flushing each, then holds the stream open until
// the client leaves (hold) or ends it at once.
func streamServer(t *testing.T, lines []string, hold bool, seen *string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*seen = r.URL.Path + "?" + r.URL.RawQuery
		w.Header().Set("Content-Type", "application/x-ndjson")
		fl := w.(http.Flusher)
		for _, l := range lines {
			fmt.Fprintln(w, l)
			fl.Flush()
		}
		if hold {
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func recv[T any](t *testing.T, ch <-chan T) (T, bool) {
	t.Helper()
	select {
	case v, ok := <-ch:
		return v, ok
	case <-time.After(5 * time.Second):
		t.Fatal("timed out waiting on the channel")
	}
	var zero T
	return zero, false
}

func TestWatch(t *testing.T) {
	lines := []string{
		`{"type":"ADDED","object":{"apiVersion":"v4","kind":"service","metadata":{"name":"a","namespace":"n"},"spec":{"selector":{},"ports":[]}}}`,
		``,
		`{"type":"MODIFIED","object":{"apiVersion":"v4","kind":"service","metadata":{"name":"a","namespace":"n","resourceVersion":"9"},"spec":{"selector":{},"ports":[]}}}`,
		`{"type":"DELETED","object":{"apiVersion":"v4","kind":"service","metadata":{"name":"a","namespace":"n"},"spec":{"selector":{},"ports":[]}}}`,
	}
	var seen string
	srv := streamServer(t, lines, true, &seen)
	c, _ := New(srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := c.Watch(ctx, v4.KindService, "n", "5")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{EventAdded, EventModified, EventDeleted} {
		ev, ok := recv(t, ch)
		if !ok || ev.Type != want || ev.Err != nil {
			t.Fatalf("event = %+v, %v; want %s", ev, ok, want)
		}
		if _, isSvc := ev.Object.(*v4.Service); !isSvc || ev.Object.GetMeta().Name != "a" {
			t.Errorf("object = %#v", ev.Object)
		}
	}
	if seen != "/v1/namespaces/n/services?resourceVersion=5&watch=true" {
		t.Errorf("request = %s", seen)
	}
	cancel()
	if ev, ok := recv(t, ch); ok {
		t.Errorf("after cancel got %+v, want a closed channel", ev)
	}
}

func TestWatchStreamEndsWithError(t *testing.T) {
	tests := []struct {
		name    string
		lines   []string
		wantErr string
	}{
		{"server closes", nil, "server closed the stream"},
		{"bad line", []string{`{not json`}, "decode event"},
		{"unknown kind", []string{`{"type":"ADDED","object":{"kind":"nope"}}`}, "unknown kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen string
			srv := streamServer(t, tt.lines, false, &seen)
			c, _ := New(srv.URL)
			ch, err := c.Watch(context.Background(), v4.KindProcess, "", "")
			if err != nil {
				t.Fatal(err)
			}
			ev, ok := recv(t, ch)
			if !ok || ev.Type != EventError || ev.Err == nil || !strings.Contains(ev.Err.Error(), tt.wantErr) {
				t.Fatalf("event = %+v, want error containing %q", ev, tt.wantErr)
			}
			if seen != "/v1/processes?watch=true" {
				t.Errorf("request = %s", seen)
			}
			if _, ok := recv(t, ch); ok {
				t.Error("channel not closed after the error")
			}
		})
	}
}

func TestWatchGone(t *testing.T) {
	_, c := newFake(t, 410, `{"error":{"code":410,"reason":"Gone","message":"revision 3 has been compacted"}}`)
	_, err := c.Watch(context.Background(), v4.KindProcess, "n", "3")
	if StatusOf(err) != 410 {
		t.Fatalf("err = %v", err)
	}
}

func TestEvents(t *testing.T) {
	f, c := newFake(t, 200, `{"kind":"EventList","items":[{"time":"2026-11-22T10:00:00Z","type":"Normal","reason":"Created",
		"kind":"process","namespace":"ns-a","name":"gamesvc","message":"process ns-a/gamesvc created"}]}`)
	evs, err := c.Events(context.Background(), v4.EventFilter{Namespace: "ns-a", Kind: v4.KindProcess, Name: "gamesvc"})
	if err != nil {
		t.Fatal(err)
	}
	if f.path != "/v1/events" || f.query != "kind=process&limit=1000&name=gamesvc&namespace=ns-a" {
		t.Errorf("request %s?%s", f.path, f.query)
	}
	if len(evs) != 1 || evs[0].Reason != "Created" || evs[0].Time.Hour() != 10 || evs[0].Kind != v4.KindProcess {
		t.Errorf("events = %+v", evs)
	}
}

func TestWatchEvents(t *testing.T) {
	var seen string
	srv := streamServer(t, []string{
		`{"time":"2026-11-22T10:00:00Z","type":"Normal","reason":"Created","kind":"process","namespace":"a","name":"x","message":"m1"}`,
		`{"time":"2026-11-22T10:00:01Z","type":"Normal","reason":"Deleted","kind":"process","namespace":"a","name":"x","message":"m2"}`,
	}, true, &seen)
	c, _ := New(srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := c.WatchEvents(ctx, v4.EventFilter{Namespace: "a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"m1", "m2"} {
		ev, ok := recv(t, ch)
		if !ok || ev.Err != nil || ev.Event.Message != want {
			t.Fatalf("got %+v, want %s", ev, want)
		}
	}
	if seen != "/v1/events?namespace=a&watch=true" {
		t.Errorf("request = %s", seen)
	}
	cancel()
	if _, ok := recv(t, ch); ok {
		t.Error("channel open after cancel")
	}
}

// TestWatchFellBehind: the ERROR line a server ends a stream with comes back as the
// stream's last item, a 410 *APIError, from object and event watches alike.
func TestWatchFellBehind(t *testing.T) {
	const errLine = `{"type":"ERROR","error":{"code":410,"reason":"Gone","message":"watch fell behind: watch again with resourceVersion=7"},"resourceVersion":"7"}`
	added := `{"type":"ADDED","object":{"apiVersion":"v4","kind":"service","metadata":{"name":"a","namespace":"n"},"spec":{"selector":{},"ports":[]}}}`
	event := `{"time":"2026-11-25T10:00:00Z","type":"Normal","reason":"Created","message":"m"}`
	var seen string
	check := func(t *testing.T, err error) {
		t.Helper()
		if StatusOf(err) != http.StatusGone || !strings.Contains(err.Error(), "resourceVersion=7") {
			t.Fatalf("last item's error %v, want the server's 410", err)
		}
		if rv := ResumeVersion(err); rv != "7" {
			t.Fatalf("resume from %q, want the ERROR line's 7", rv)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	c, _ := New(streamServer(t, []string{added, errLine}, true, &seen).URL)
	ch, err := c.Watch(ctx, v4.KindService, "n", "")
	if err != nil {
		t.Fatal(err)
	}
	if ev, _ := recv(t, ch); ev.Type != EventAdded {
		t.Fatalf("first: %+v", ev)
	}
	ev, _ := recv(t, ch)
	if ev.Type != EventError {
		t.Fatalf("second: %+v, want the error", ev)
	}
	check(t, ev.Err)

	c, _ = New(streamServer(t, []string{event, errLine}, true, &seen).URL)
	evs, err := c.WatchEvents(ctx, v4.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if it, _ := recv(t, evs); it.Err != nil || it.Event.Reason != "Created" {
		t.Fatalf("first: %+v", it)
	}
	it, _ := recv(t, evs)
	check(t, it.Err)
}
