package server

import (
	"net/http"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
)

// handleAgentCatalog lists or watches (?watch=true, from ?resourceVersion=) every
// service or every endpoints object of the cluster for an agent, from the server's shared
// caches: five thousand agents following them cost no etcd watch each. A
// resourceVersion older than the cache's history answers 410: the agent lists again.
func (s *Server) handleAgentCatalog(kind v4.Kind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := s.catalog[kind]
		q := r.URL.Query()
		watch, err := boolParam(q.Get("watch"), "watch")
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if !watch {
			ctx, cancel := requestContext(r)
			defer cancel()
			if err := s.cacheCurrent(ctx, c); err != nil {
				s.writeError(w, r, err)
				return
			}
			items, rev, err := c.List("", "")
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			if items == nil {
				items = []v4.Object{}
			}
			writeJSON(w, http.StatusOK, listBody{Kind: "List", ResourceVersion: strconv.FormatInt(rev, 10), Items: items})
			return
		}
		from, err := resourceVersionParam(q.Get("resourceVersion"))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ctx, cancel := s.streamContext(r)
		defer cancel()
		if err := synced(ctx, c); err != nil {
			s.writeError(w, r, err)
			return
		}
		ch, err := c.Watch(ctx, "", "", from)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		stream(ctx, w, ch, objectLine)
	}
}

// resourceVersionParam parses ?resourceVersion= (0 when absent).
func resourceVersionParam(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, errorf(http.StatusBadRequest, "resourceVersion %q is not a non-negative integer", v)
	}
	return n, nil
}
