package server

import (
	"context"
	"net/http"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// The task groups of one node: the agent's desired state (docs/agent.md).

func (s *Server) taskGroups() store.TypedStore[*v4.TaskGroup] {
	return store.Typed[*v4.TaskGroup](s.store, v4.KindTaskGroup)
}

// handleAgentTaskGroups lists the task groups bound to the node, or with watch=true
// streams them: an ADDED per existing one (without resourceVersion), then every change.
// The agent lists, reconciles, then watches from the list's revision.
func (s *Server) handleAgentTaskGroups(w http.ResponseWriter, r *http.Request) {
	node := r.PathValue("name")
	q := r.URL.Query()
	watch, err := boolParam(q.Get("watch"), "watch")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if watch {
		s.watchNodeTaskGroups(w, r, node)
		return
	}
	ctx, cancel := requestContext(r)
	defer cancel()
	tgs, rev, err := s.taskGroups().List(ctx, "")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	items := []v4.Object{}
	for _, tg := range tgs {
		if tg.Spec.Node == node {
			items = append(items, tg)
		}
	}
	writeJSON(w, http.StatusOK, listBody{Kind: "List", ResourceVersion: strconv.FormatInt(rev, 10), Items: items})
}

// watchNodeTaskGroups streams the task group events of one node. A task group that
// leaves the node (its spec.node changes, which berth's own controllers never do) is sent
// as DELETED, so the agent stops it.
func (s *Server) watchNodeTaskGroups(w http.ResponseWriter, r *http.Request, node string) {
	var from int64
	if v := r.URL.Query().Get("resourceVersion"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			s.writeError(w, r, errorf(http.StatusBadRequest, "resourceVersion %q is not a non-negative integer", v))
			return
		}
		from = n
	}
	ctx, cancel := s.streamContext(r)
	defer cancel()
	// Which task groups are on the node now, to tell a move away from an unrelated change
	// when resuming (without resourceVersion the ADDED events fill this in).
	mine := map[string]bool{}
	if from > 0 {
		tgs, _, err := s.taskGroups().List(ctx, "")
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		for _, tg := range tgs {
			if tg.Spec.Node == node {
				mine[tg.Metadata.Namespace+"/"+tg.Metadata.Name] = true
			}
		}
	}
	in, err := s.store.Watch(ctx, v4.KindTaskGroup, "", from, store.Bounded(s.watchLimit))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make(chan store.Event, cap(in))
	go filterNode(ctx, in, out, node, mine)
	stream(ctx, w, out, objectLine)
}

// filterNode forwards the events of node's task groups from in to out, and closes out
// when in closes (in closes when ctx ends, so the goroutine ends with the request).
func filterNode(ctx context.Context, in <-chan store.Event, out chan<- store.Event, node string, mine map[string]bool) {
	defer close(out)
	for ev := range in {
		tg, ok := ev.Object.(*v4.TaskGroup)
		if !ok {
			if ev.Type == store.Error { // the stream's last word: the agent re-lists
				send(ctx, out, ev)
			}
			continue
		}
		key := tg.Metadata.Namespace + "/" + tg.Metadata.Name
		switch {
		case tg.Spec.Node == node:
			if ev.Type == store.Deleted {
				delete(mine, key)
			} else {
				mine[key] = true
			}
		case mine[key] && ev.Type != store.Deleted:
			delete(mine, key)
			ev.Type = store.Deleted // moved to another node: gone from this one
		default:
			continue
		}
		send(ctx, out, ev) // after ctx ends, keep draining in: it closes shortly after
	}
}

// send puts ev on out unless ctx ends first.
func send(ctx context.Context, out chan<- store.Event, ev store.Event) {
	select {
	case out <- ev:
	case <-ctx.Done():
	}
}
