package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// RevisionParam is the revision a watch starts from, given as the query parameter name
// with value v (0 when absent).
func RevisionParam(name, v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, Errorf(http.StatusBadRequest, "%s=%q is not a resourceVersion (a non-negative integer)", name, v)
	}
	return n, nil
}

// StreamWriteTimeout is how long one write of a stream may wait for its client: a
// client that stops reading for longer is cut off, which frees what its stream holds.
var StreamWriteTimeout = 30 * time.Second // a variable for the tests

// ObjectLine is the stream line of one store event: the event's shared line when it
// carries one (a change of a shared cache, encoded once for all its streams), which
// Stream writes as it is. A line function that changes the event's object (a secret
// without its values) and then calls ObjectLine gets the line of the changed object:
// a shared line belongs to the object it was made for.
func ObjectLine(ev store.Event) any {
	if ev.Type == store.Error {
		return NewErrorLine(ev.Err, ev.Revision)
	}
	if line, ok := ev.SharedLine(); ok {
		return line
	}
	return v4.WatchLine[v4.Object]{Type: string(ev.Type), Object: ev.Object}
}

// NewErrorLine is the line that ends a stream with err; rev, when set, is the revision
// to watch again from.
func NewErrorLine(err error, rev int64) v4.WatchErrorLine {
	l := v4.WatchErrorLine{Type: string(store.Error), Error: (*v4.Status)(FromError(err))}
	if rev > 0 {
		l.ResourceVersion = strconv.FormatInt(rev, 10)
	}
	return l
}

// StreamContext ends when the client goes away or streams (the server's, ended when it
// closes) ends.
func StreamContext(streams context.Context, r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(streams, cancel)
	return ctx, func() { stop(); cancel() }
}

// Stream writes every value of ch as one JSON line (what line returns, encoded, or a
// *store.EncodedLine as it is) until ch closes, ctx ends or a write fails. It flushes
// whenever it has caught up, so a burst (the initial ADDED events) goes out in few
// writes while live events go out at once. A write that waits on its client longer than
// StreamWriteTimeout fails and ends the stream.
func Stream[T any](ctx context.Context, w http.ResponseWriter, ch <-chan T, line func(T) any) {
	rc, guard, ok := startStream(w)
	if !ok {
		return
	}
	defer guard.stop()
	enc := json.NewEncoder(w)
	for {
		select {
		case <-ctx.Done():
			return
		case v, ok := <-ch:
			if !ok {
				return
			}
			guard.begin()
			if writeLine(w, enc, line(v)) != nil {
				return
			}
			if len(ch) == 0 {
				if rc.Flush() != nil {
					return
				}
				guard.end()
			}
		}
	}
}

// Source is what StreamFrom writes: values the handler's own goroutine takes as they
// come, with no goroutine or channel between them (a cache.Subscription).
type Source[T any] interface {
	// Ready receives when values may be waiting, or the source has ended.
	Ready() <-chan struct{}
	// Next takes the oldest waiting value without blocking: ok when one was taken, open
	// false once the source has ended and nothing follows.
	Next() (v T, ok, open bool)
}

// StreamFrom is Stream of the values of src, until src ends, ctx ends or a write
// fails: it takes what waits, writes it and flushes once caught up, then waits on
// src.Ready. The caller ends src when it returns.
func StreamFrom[T any](ctx context.Context, w http.ResponseWriter, src Source[T], line func(T) any) {
	rc, guard, ok := startStream(w)
	if !ok {
		return
	}
	defer guard.stop()
	enc := json.NewEncoder(w)
	written := false // since the last flush
	for {
		v, ok, open := src.Next()
		if ok {
			guard.begin()
			if writeLine(w, enc, line(v)) != nil {
				return
			}
			written = true
			if open {
				continue
			}
		}
		if written { // caught up, or ended: what was written goes out
			if rc.Flush() != nil {
				return
			}
			guard.end()
			written = false
		}
		if !open {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-src.Ready():
		}
	}
}

// startStream answers 200 with a stream's headers and flushes them; ok is false when
// the client is gone. The guard bounds each write's wait; stop it when the stream ends.
func startStream(w http.ResponseWriter) (*http.ResponseController, *writeGuard, bool) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return nil, nil, false
	}
	return rc, newWriteGuard(rc, StreamWriteTimeout), true // no deadline while the stream waits
}

// writeLine writes one line of a stream: a line encoded already as it is, anything else
// encoded.
func writeLine(w http.ResponseWriter, enc *json.Encoder, l any) error {
	if e, ok := l.(*store.EncodedLine); ok {
		_, err := w.Write(e.Bytes())
		return err
	}
	return enc.Encode(l)
}
