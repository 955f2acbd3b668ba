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
	ns, name := r.PathValue("ns"), r.PathValue("name")
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	if err := a.nodeUses(ctx, r, "configmap", func(p *v4.PodSpec) bool { return usesConfigMap(p, name) }); err != nil {
		return err
	}
	cm, err := store.Typed[*v4.ConfigMap](a.store, v4.KindConfigMap).Get(ctx, ns, name)
	if errors.Is(err, store.ErrNotFound) {
		err = httpapi.Errorf(http.StatusNotFound, "configmap %s/%s not found", ns, name)
	}
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, cm)
	return nil
}

// handleAgentSecret answers a secret to the agent of a node when a task group of that node
// in the secret's namespace refers to it: the one named by ?taskgroup= when given, else
// any. Otherwise 403, whether or not the secret exists, so an agent cannot probe other
// nodes' secrets.
func (a *API) handleAgentSecret(w http.ResponseWriter, r *http.Request) error {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	if err := a.nodeUses(ctx, r, "secret", func(p *v4.PodSpec) bool { return usesSecret(p, name) }); err != nil {
		return err
	}
	sec, err := store.Typed[*v4.Secret](a.store, v4.KindSecret).Get(ctx, ns, name)
	if errors.Is(err, store.ErrNotFound) {
		err = httpapi.Errorf(http.StatusNotFound, "secret %s/%s not found", ns, name)
	}
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, sec)
	return nil
}

// nodeUses checks that a task group of the requesting agent's node, in the path's
// namespace (the one named by ?taskgroup= when given), uses the object: 403 otherwise.
// ?node=, which older agents send, must name the certificate's node when present.
func (a *API) nodeUses(ctx context.Context, r *http.Request, what string, uses func(*v4.PodSpec) bool) error {
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
		return tg.Spec.Node == node && (only == "" || tg.Metadata.Name == only) && uses(&tg.Spec.Template.Spec)
	}) {
		return httpapi.Errorf(http.StatusForbidden, "no task group of node %s uses %s %s/%s", node, what, ns, name)
	}
	return nil
}

// usesSecret reports whether a container or process of the pod refers to secret name.
func usesSecret(p *v4.PodSpec, name string) bool {
	ref := func(r v4.SecretRef) bool { return r.SecretName == name }
	for _, c := range p.Containers {
		if slices.ContainsFunc(c.Secrets, ref) {
			return true
		}
	}
	for _, t := range p.Processes {
		if slices.ContainsFunc(t.Secrets, ref) {
			return true
		}
	}
	return false
}

// usesConfigMap reports whether a container or process of the pod refers to configmap name.
func usesConfigMap(p *v4.PodSpec, name string) bool {
	ref := func(r v4.ConfigMapRef) bool { return r.Name == name }
	for _, c := range p.Containers {
		if slices.ContainsFunc(c.ConfigMaps, ref) {
			return true
		}
	}
	for _, t := range p.Processes {
		if slices.ContainsFunc(t.ConfigMaps, ref) {
			return true
		}
	}
	return false
}
