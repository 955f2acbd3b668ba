package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// watchObjects streams the changes of a kind as NDJSON (docs/api.md, Watch).
func (s *Server) watchObjects(w http.ResponseWriter, r *http.Request, kind v4.Kind, ns string) error {
	from, err := httpapi.RevisionParam("resourceVersion", r.URL.Query().Get("resourceVersion"))
	if err != nil {
		return err
	}
	// A watch takes the filters that do not depend on status: one that hid objects
	// leaving a phase would never tell the client they left.
	match, err := filterOf(r, kind, "owner", "node")
	if err != nil {
		return err
	}
	keysOnly, err := keysOnlyOf(r, kind)
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
	httpapi.Stream(ctx, w, ch, func(ev store.Event) any {
		if ev.Type == store.Error {
			if _, behind := errors.AsType[*store.FellBehindError](ev.Err); behind {
				cutOff.Inc()
			}
		} else {
			sent.Inc()
		}
		if keysOnly && ev.Object != nil {
			ev.Object = withoutValues(ev.Object)
		}
		return httpapi.ObjectLine(ev)
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
