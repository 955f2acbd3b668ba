package server

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/scheduler"
	"github.com/berthhq/berth/internal/store"
)

// pageParams are the query parameters that turn a list into a page of it: without any of
// them a list returns every object, as it always did. keysOnly (secrets without their
// values, keysonly.go) is answered a page at a time too.
var pageParams = []string{"limit", "continue", "q", "phase", "owner", "node", "keysOnly"}

// maxFilterLen bounds a filter's text (names are at most 253 characters).
const maxFilterLen = 253

// paged reports whether the list request asks for a page.
func paged(r *http.Request) bool {
	q := r.URL.Query()
	for _, p := range pageParams {
		if q.Has(p) {
			return true
		}
	}
	return false
}

// pageOf reads a page request: limit (default 100, at most store.MaxPageLimit), the
// continue token of the previous page, and the filters (filterOf).
func pageOf(r *http.Request, kind v4.Kind) (store.Page, error) {
	q := r.URL.Query()
	p := store.Page{Limit: 100, Continue: q.Get("continue")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxPageLimit {
			return p, httpapi.Errorf(http.StatusBadRequest, "limit %q is not a number within 1..%d", v, store.MaxPageLimit)
		}
		p.Limit = n
	}
	match, err := filterOf(r, kind, "q", "phase", "owner", "node")
	if err != nil {
		return p, err
	}
	p.Match = match
	return p, nil
}

// filterOf builds the filter of the request's parameters among names (nil when none is
// given): q (part of the name, any case), phase (the status phase), and for task groups
// owner ("{kind}/{name}") and node.
func filterOf(r *http.Request, kind v4.Kind, names ...string) (func(v4.Object) bool, error) {
	q := r.URL.Query()
	var filters []func(v4.Object) bool
	for _, name := range names {
		v := q.Get(name)
		if v == "" {
			continue
		}
		if len(v) > maxFilterLen {
			return nil, httpapi.Errorf(http.StatusBadRequest, "%s is longer than %d characters", name, maxFilterLen)
		}
		if (name == "owner" || name == "node") && kind != v4.KindTaskGroup {
			return nil, httpapi.Errorf(http.StatusBadRequest, "%s filters task groups only, not %s", name, kind)
		}
		switch name {
		case "q":
			part := strings.ToLower(v)
			filters = append(filters, func(o v4.Object) bool { return strings.Contains(strings.ToLower(o.GetMeta().Name), part) })
		case "phase":
			filters = append(filters, func(o v4.Object) bool { return strings.EqualFold(phaseOf(o), v) })
		case "owner":
			ownerKind, ownerName, ok := strings.Cut(v, "/")
			if !ok || ownerKind == "" || ownerName == "" {
				return nil, httpapi.Errorf(http.StatusBadRequest, "owner %q is not {kind}/{name}", v)
			}
			filters = append(filters, func(o v4.Object) bool {
				owner := o.(*v4.TaskGroup).Spec.Owner
				return strings.EqualFold(string(owner.Kind), ownerKind) && owner.Name == ownerName
			})
		case "node":
			filters = append(filters, func(o v4.Object) bool { return o.(*v4.TaskGroup).Spec.Node == v })
		}
	}
	if len(filters) == 0 {
		return nil, nil
	}
	return func(o v4.Object) bool {
		for _, f := range filters {
			if !f(o) {
				return false
			}
		}
		return true
	}, nil
}

// phaseOf is an object's status phase, "" for kinds without one.
func phaseOf(o v4.Object) string {
	switch o := o.(type) {
	case *v4.TaskGroup:
		return o.Status.Phase
	case *v4.Application:
		return o.Status.Phase
	case *v4.Process:
		return o.Status.Phase
	case *v4.Daemonset:
		return o.Status.Phase
	case *v4.Deployment:
		return o.Status.Phase
	case *v4.Node:
		return o.Status.Phase
	case *v4.Job:
		return o.Status.Phase
	case *v4.Workflow:
		return o.Status.Phase
	}
	return ""
}

// pageBody is a page of a list: listBody with the next page's token and, unfiltered, the
// size of the whole list.
type pageBody struct {
	httpapi.ListBody
	Continue string `json:"continue,omitempty"`
	Total    *int64 `json:"total,omitempty"`
	// Usage is, for a page of nodes, what each node's task groups hold (the scheduler's
	// accounting), so a console shows usage beside capacity without reading task groups.
	Usage map[string]scheduler.NodeUsage `json:"usage,omitempty"`
}

// listPage answers a paged list request.
func (s *Server) listPage(w http.ResponseWriter, r *http.Request, kind v4.Kind, ns string) error {
	p, err := pageOf(r, kind)
	if err != nil {
		return err
	}
	keysOnly, err := keysOnlyOf(r, kind)
	if err != nil {
		return err
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	res, err := s.store.ListPage(ctx, kind, ns, p)
	if err != nil {
		return err
	}
	body := pageBody{ListBody: httpapi.ListBody{Kind: "List", ResourceVersion: strconv.FormatInt(res.Revision, 10), Items: res.Items},
		Continue: res.Continue}
	if body.Items == nil {
		body.Items = []v4.Object{}
	}
	if keysOnly {
		for i, o := range body.Items {
			body.Items[i] = withoutValues(o)
		}
	}
	if res.Total >= 0 {
		body.Total = &res.Total
	}
	if kind == v4.KindNode && len(res.Items) > 0 {
		names := make([]string, len(res.Items))
		for i, o := range res.Items {
			names[i] = o.GetMeta().Name
		}
		s.feed.With(func(snap *scheduler.Snapshot) { body.Usage = snap.Usage(names, time.Now()) })
	}
	httpapi.WriteJSON(w, http.StatusOK, body)
	return nil
}
