package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// watchLine is one line of an object watch stream.
type watchLine struct {
	Type   store.EventType `json:"type"`
	Object v4.Object       `json:"object"`
}

// errorLine is the last line of a stream the server ends (docs/api.md, Watch): a client
// that fell behind gets 410 with the resourceVersion to watch again from.
type errorLine struct {
	Type            store.EventType `json:"type"`
	Error           *apiError       `json:"error"`
	ResourceVersion string          `json:"resourceVersion,omitempty"`
}

// streamWriteTimeout is how long one write of a stream may wait for its client: a
// client that stops reading for longer is cut off, which frees what its stream holds.
var streamWriteTimeout = 30 * time.Second // a variable for the tests

// objectLine is the stream line of one store event.
func objectLine(ev store.Event) any {
	if ev.Type == store.Error {
		return newErrorLine(ev.Err, ev.Revision)
	}
	return watchLine{Type: ev.Type, Object: ev.Object}
}

func newErrorLine(err error, rev int64) errorLine {
	l := errorLine{Type: store.Error, Error: fromError(err)}
	if rev > 0 {
		l.ResourceVersion = strconv.FormatInt(rev, 10)
	}
	return l
}

// streamContext ends when the client goes away or the server closes its streams.
func (s *Server) streamContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.streams, cancel)
	return ctx, func() { stop(); cancel() }
}

// watchObjects streams the changes of a kind as NDJSON (docs/api.md, Watch).
func (s *Server) watchObjects(w http.ResponseWriter, r *http.Request, kind v4.Kind, ns string) error {
	var from int64
	if v := r.URL.Query().Get("resourceVersion"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return errorf(http.StatusBadRequest, "resourceVersion %q is not a non-negative integer", v)
		}
		from = n
	}
	// A watch takes the filters that do not depend on status: one that hid objects
	// leaving a phase would never tell the client they left.
	match, err := filterOf(r, kind, "owner", "node")
	if err != nil {
		return err
	}
	ctx, cancel := s.streamContext(r)
	defer cancel()
	var ch <-chan store.Event
	if kind == v4.KindTaskGroup {
		ch, err = s.watchTaskGroups(ctx, ns, from)
	} else {
		ch, err = s.store.Watch(ctx, kind, ns, from, store.Bounded(s.watchLimit))
	}
	if err != nil {
		return err
	}
	if name := r.URL.Query().Get("name"); name != "" {
		ch = onlyMatching(ctx, ch, func(o v4.Object) bool { return o.GetMeta().Name == name })
	}
	if match != nil {
		ch = onlyMatching(ctx, ch, match)
	}
	k := string(kind)
	s.metrics.watchStreams.WithLabelValues(k).Inc()
	defer s.metrics.watchStreams.WithLabelValues(k).Dec()
	sent, cutOff := s.metrics.watchEvents.WithLabelValues(k), s.metrics.watchCutOffs.WithLabelValues(k)
	stream(ctx, w, ch, func(ev store.Event) any {
		if ev.Type == store.Error {
			if _, behind := errors.AsType[*store.FellBehindError](ev.Err); behind {
				cutOff.Inc()
			}
		} else {
			sent.Inc()
		}
		return objectLine(ev)
	})
	return nil
}

// watchTaskGroups watches task groups from the shared cache: no etcd watch and no
// decoding per watcher, which in a burst of placements cost more than the placements.
// The cache keeps the last changes (docs/store.md, "Shared cache"): a watch from before
// them fails with 410 (list again), and a watcher that falls too far behind is cut off
// with 410 naming the revision to watch again from, as a bounded store watch is.
func (s *Server) watchTaskGroups(ctx context.Context, ns string, from int64) (<-chan store.Event, error) {
	sctx, cancel := context.WithTimeout(ctx, cacheSyncWait)
	defer cancel()
	if err := s.cacheSynced(sctx); err != nil {
		return nil, err
	}
	index, value := indexNamespace, ns
	if ns == "" {
		index = ""
	}
	ch, err := s.taskGroupCache.Watch(ctx, index, value, from)
	if err != nil {
		return nil, fmt.Errorf("watch task groups: %w", err)
	}
	return ch, nil
}

// cacheSyncWait is how long a request waits for the shared cache's first list.
const cacheSyncWait = 10 * time.Second

// onlyMatching passes on the events of the objects match accepts (the object named in an
// operation's watch URL, a workload's task groups), and the error that ends a watch; it
// ends with the watch (ctx) or when in ends.
func onlyMatching(ctx context.Context, in <-chan store.Event, match func(v4.Object) bool) <-chan store.Event {
	out := make(chan store.Event)
	go func() {
		defer close(out)
		for ev := range in {
			if ev.Type != store.Error && (ev.Object == nil || !match(ev.Object)) {
				continue
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// stream writes every value of ch as one JSON line until ch closes, ctx ends or a write
// fails. It flushes whenever it has caught up, so a burst (the initial ADDED events) goes
// out in few writes while live events go out at once. A write that waits on its client
// longer than streamWriteTimeout fails and ends the stream.
func stream[T any](ctx context.Context, w http.ResponseWriter, ch <-chan T, line func(T) any) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return
	}
	enc := json.NewEncoder(w)
	for {
		select {
		case <-ctx.Done():
			return
		case v, ok := <-ch:
			if !ok {
				return
			}
			if rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout)) != nil {
				return
			}
			if enc.Encode(line(v)) != nil {
				return
			}
			if len(ch) == 0 {
				if rc.Flush() != nil {
					return
				}
				// Caught up: no deadline while the stream waits. Over HTTP/2 a deadline
				// is a timer that resets the stream when it fires, written to or not.
				if rc.SetWriteDeadline(time.Time{}) != nil {
					return
				}
			}
		}
	}
}
