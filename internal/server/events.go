package server

import (
	"context"
	"fmt"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
)

type eventListBody struct {
	Kind  string     `json:"kind"`
	Items []v4.Event `json:"items"`
}

// record writes an event about obj ("process ns-a/web created"). A failure is logged and
// never fails the request: the object change itself has succeeded.
func (s *Server) record(ctx context.Context, obj v4.Object, reason, verb string) {
	m := obj.GetMeta()
	ref := m.Name // cluster-scoped objects (nodes) have no namespace
	if m.Namespace != "" {
		ref = m.Namespace + "/" + m.Name
	}
	rec := v4.Event{
		Type:      v4.EventNormal,
		Reason:    reason,
		Kind:      obj.GetKind(),
		Namespace: m.Namespace,
		Name:      m.Name,
		Message:   fmt.Sprintf("%s %s %s", obj.GetKind(), ref, verb),
	}
	if err := s.store.RecordEvent(context.WithoutCancel(ctx), rec); err != nil {
		s.log.Warn("cannot record event", "reason", reason, "kind", rec.Kind,
			"namespace", rec.Namespace, "name", rec.Name, "err", err)
	}
}

// handleEvents lists event records, or streams new ones as NDJSON with watch=true.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := v4.EventFilter{Namespace: q.Get("namespace"), Name: q.Get("name")}
	if k := q.Get("kind"); k != "" {
		kind, err := v4.ParseKind(k)
		if err != nil {
			s.writeError(w, r, errorf(http.StatusBadRequest, "query parameter kind: %v", err))
			return
		}
		f.Kind = kind
	}
	watch, err := boolParam(q.Get("watch"), "watch")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if watch {
		s.watchEvents(w, r, f)
		return
	}
	ctx, cancel := requestContext(r)
	defer cancel()
	recs, err := s.store.ListEvents(ctx, f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, eventListBody{Kind: "EventList", Items: recs})
}

func (s *Server) watchEvents(w http.ResponseWriter, r *http.Request, f v4.EventFilter) {
	ctx, cancel := s.streamContext(r)
	defer cancel()
	ch, err := s.store.WatchEvents(ctx, f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	stream(ctx, w, ch, func(rec v4.Event) any { return rec })
}
