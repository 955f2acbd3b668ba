package server

import (
	"errors"
	"net/http"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// handleEvents lists event records a page at a time, or streams new ones as NDJSON with
// watch=true.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := v4.EventFilter{Namespace: q.Get("namespace"), Name: q.Get("name")}
	if k := q.Get("kind"); k != "" {
		kind, err := v4.ParseKind(k)
		if err != nil {
			return httpapi.Errorf(http.StatusBadRequest, "query parameter kind: %v", err)
		}
		f.Kind = kind
	}
	watch, err := httpapi.BoolParam(q.Get("watch"), "watch")
	if err != nil {
		return err
	}
	if watch {
		return s.watchEvents(w, r, f)
	}
	limit, err := limitParam(q.Get("limit"))
	if err != nil {
		return err
	}
	newest, err := orderParam(q.Get("order"))
	if err != nil {
		return err
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	page, err := s.store.ListEventsPageOrder(ctx, f, limit, q.Get("continue"), newest)
	if errors.Is(err, store.ErrCompacted) {
		err = httpapi.Errorf(http.StatusGone, "query parameter continue: the list's revision was compacted: list again from the start (%v)", err)
	}
	if err != nil {
		return err
	}
	items := page.Items
	if items == nil {
		items = []v4.Event{}
	}
	httpapi.WriteJSON(w, http.StatusOK, v4.EventList{Kind: "EventList", ResourceVersion: strconv.FormatInt(page.Revision, 10),
		Continue: page.Continue, Items: items})
	return nil
}

// limitParam parses the page size of a list: absent means the default.
func limitParam(v string) (int, error) {
	if v == "" {
		return store.DefaultEventLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > store.MaxEventLimit {
		return 0, httpapi.Errorf(http.StatusBadRequest, "query parameter limit=%q: want a whole number from 1 to %d", v, store.MaxEventLimit)
	}
	return n, nil
}

// orderParam parses the order of a list: oldest (least recently seen) first, the
// default, or newest first (order=newest), as a console shows them.
func orderParam(v string) (newest bool, err error) {
	switch v {
	case "", "oldest":
		return false, nil
	case "newest":
		return true, nil
	}
	return false, httpapi.Errorf(http.StatusBadRequest, "query parameter order=%q: want oldest or newest", v)
}

// watchEvents streams the records written from now on, or after resourceVersion (a
// list's), which a console lists first and then watches from (410 when compacted).
func (s *Server) watchEvents(w http.ResponseWriter, r *http.Request, f v4.EventFilter) error {
	after, err := httpapi.RevisionParam("resourceVersion", r.URL.Query().Get("resourceVersion"))
	if err != nil {
		return err
	}
	ctx, cancel := s.streamContext(r)
	defer cancel()
	ch, err := s.store.WatchEventsAfter(ctx, f, after, store.Bounded(s.watchLimit))
	if err != nil {
		return err
	}
	httpapi.Stream(ctx, w, ch, func(it store.WatchedEvent) any {
		if it.Err != nil {
			return httpapi.NewErrorLine(it.Err, 0)
		}
		return it.Event
	})
	return nil
}
