package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
)

// streamList answers a whole (unpaged) list object by object, as etcd gives them a chunk
// at a time (store.ListEach): the body is the same {"kind","resourceVersion","items"}
// document, but the server never holds the list, so lists of any size cost a bounded
// amount of memory per request (docs/api.md, Lists). Items come in key order. An error
// after the first byte cannot change the status any more: the connection is cut, so a
// client never takes a truncated list for a whole one (also when etcd compacted the
// list's revision while a slow client read it).
func (s *Server) streamList(w http.ResponseWriter, r *http.Request, kind v4.Kind, ns string) error {
	return s.streamItems(w, r, string(kind), ns, func(start func(int64) error, item func(any) error) error {
		return s.store.ListEach(r.Context(), kind, ns, start, func(obj v4.Object) error { return item(obj) })
	})
}

// streamItems writes the list that walk gives, as streamList describes: walk calls start
// once with the list's revision, then item with each of its items. what and ns name the
// list in the log.
func (s *Server) streamItems(w http.ResponseWriter, r *http.Request, what, ns string, walk func(start func(int64) error, item func(any) error) error) error {
	if !member(r) {
		// Whole lists take turns (a few at once), so that many of them cannot take the
		// server's CPU from every other request.
		wait, cancel := httpapi.RequestContext(r)
		defer cancel()
		select {
		case s.lists <- struct{}{}:
			defer func() { <-s.lists }()
		case <-wait.Done():
			w.Header().Set("Retry-After", "1")
			return httpapi.Errorf(http.StatusServiceUnavailable, "503: the server is busy with other whole lists; retry, or list in pages (?limit=500)")
		}
	}
	started, n := false, 0
	enc := json.NewEncoder(w)
	// The walk lasts as long as the client reads (a large list to a slow client takes
	// longer than one request's timeout); it ends when the client goes away.
	err := walk(func(rev int64) error {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		started = true
		_, err := fmt.Fprintf(w, `{"kind":"List","resourceVersion":%q,"items":[`, strconv.FormatInt(rev, 10))
		return err
	}, func(v any) error {
		if n > 0 {
			if _, err := w.Write([]byte{','}); err != nil {
				return err
			}
		}
		n++
		return enc.Encode(v)
	})
	if err != nil {
		if !started {
			return err
		}
		s.log.Warn("a list was cut short", "kind", what, "namespace", ns, "items", n, "err", err)
		panic(http.ErrAbortHandler)
	}
	w.Write([]byte("]}\n"))
	return nil
}
