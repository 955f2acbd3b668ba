package agentapi

import (
	"context"
	"errors"
	"net/http"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// What task groups inject: a configmap or a secret goes only to the agent of a node that
// runs a task group using it (docs/security.md, Node identity), the node being the one its
// certificate names.

func (a *API) handleAgentConfigMap(w http.ResponseWriter, r *http.Request) error {
	return a.serveConfigData(w, r, v4.KindConfigMap)
}

// handleAgentSecret answers a secret to the agent of a node when a task group of that node
// in the secret's namespace refers to it: the one named by ?taskgroup= when given, else
// any. Otherwise 403, whether or not the secret exists, so an agent cannot probe other
// nodes' secrets.
func (a *API) handleAgentSecret(w http.ResponseWriter, r *http.Request) error {
	return a.serveConfigData(w, r, v4.KindSecret)
}

// serveConfigData answers the configmap or secret (kind) of the path to an agent whose
// node uses it.
func (a *API) serveConfigData(w http.ResponseWriter, r *http.Request, kind v4.Kind) error {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	if err := a.nodeUses(ctx, r, kind); err != nil {
		return err
	}
	obj, err := a.store.Get(ctx, kind, ns, name)
	if errors.Is(err, store.ErrNotFound) {
		err = httpapi.Errorf(http.StatusNotFound, "%s %s/%s not found", kind, ns, name)
	}
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, obj)
	return nil
}

// nodeUses checks that a task group of the requesting agent's node, in the path's
// namespace (the one named by ?taskgroup= when given), uses the object: 403 otherwise.
// ?node=, which older agents send, must name the certificate's node when present.
func (a *API) nodeUses(ctx context.Context, r *http.Request, kind v4.Kind) error {
	ns, name, node := r.PathValue("ns"), r.PathValue("name"), httpapi.NodeOf(r)
	if q := r.URL.Query().Get("node"); q != "" && q != node {
		return httpapi.Errorf(http.StatusForbidden, "this agent's certificate is for node %s, not %s", node, q)
	}
	only := r.URL.Query().Get("taskgroup")
	tgs, _, err := a.taskGroups().List(ctx, ns)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(tgs, func(tg *v4.TaskGroup) bool {
		return tg.Spec.Node == node && (only == "" || tg.Metadata.Name == only) && tg.Spec.Template.Spec.Names(kind, name)
	}) {
		return httpapi.Errorf(http.StatusForbidden, "no task group of node %s uses %s %s/%s", node, kind, ns, name)
	}
	return nil
}
