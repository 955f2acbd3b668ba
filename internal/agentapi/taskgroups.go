package agentapi

import (
	"net/http"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// The task groups of one node: the agent's desired state (docs/agent.md).

func (a *API) taskGroups() store.TypedStore[*v4.TaskGroup] {
	return store.Typed[*v4.TaskGroup](a.store, v4.KindTaskGroup)
}

// handleAgentTaskGroups lists the task groups bound to the node, or with watch=true
// streams them: an ADDED per existing one (without resourceVersion), then every change.
// The agent lists, reconciles, then watches from the list's revision.
func (a *API) handleAgentTaskGroups(w http.ResponseWriter, r *http.Request) error {
	node := r.PathValue("name")
	q := r.URL.Query()
	watch, err := httpapi.BoolParam(q.Get("watch"), "watch")
	if err != nil {
		return err
	}
	if watch {
		return a.watchNodeTaskGroups(w, r, node)
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	if err := httpapi.CacheCurrent(ctx, a.store, a.taskGroupCache); err != nil {
		return err
	}
	items, rev, err := a.taskGroupCache.List(controller.IndexNode, node)
	if err != nil {
		return err
	}
	if items == nil {
		items = []v4.Object{}
	}
	httpapi.WriteJSON(w, http.StatusOK, httpapi.ListBody{Kind: "List", ResourceVersion: strconv.FormatInt(rev, 10), Items: items})
	return nil
}

// watchNodeTaskGroups streams the task group events of one node from the shared cache
// (a cache.Subscription, written by the handler's own goroutine). A
// task group that leaves the node (its spec.node changes, which berth's own controllers
// never do) is sent as DELETED, so the agent stops it. A resourceVersion older than the
// cache's history answers 410: the agent lists again.
func (a *API) watchNodeTaskGroups(w http.ResponseWriter, r *http.Request, node string) error {
	from, err := httpapi.RevisionParam("resourceVersion", r.URL.Query().Get("resourceVersion"))
	if err != nil {
		return err
	}
	ctx, cancel := httpapi.StreamContext(a.streams, r)
	defer cancel()
	if err := httpapi.Synced(ctx, a.taskGroupCache); err != nil {
		return err
	}
	// A subscription, not a watch's channel: the handler takes the events itself, with
	// no goroutine per agent beside it (at 5,000 nodes, 5,000 fewer goroutines' stacks).
	sub, err := a.taskGroupCache.Subscribe(ctx, controller.IndexNode, node, from)
	if err != nil {
		return err
	}
	defer sub.Close()
	httpapi.StreamFrom(ctx, w, sub, httpapi.ObjectLine)
	return nil
}
