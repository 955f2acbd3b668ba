package server

import (
	"errors"
	"net/http"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// What task groups inject: configmaps for any agent, secrets only for the agent of a node
// that runs a task group using them (DESIGN §7).

func (s *Server) handleAgentConfigMap(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	ctx, cancel := requestContext(r)
	defer cancel()
	cm, err := store.Typed[*v4.ConfigMap](s.store, v4.KindConfigMap).Get(ctx, ns, name)
	if errors.Is(err, store.ErrNotFound) {
		err = errorf(http.StatusNotFound, "configmap %s/%s not found", ns, name)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, cm)
}

// handleAgentSecret answers a secret to the agent of node (?node=, required) when a task
// group of that node in the secret's namespace refers to it: the one named by
// ?taskgroup= when given, else any. Otherwise 403, whether or not the secret exists, so
// an agent cannot probe other nodes' secrets.
func (s *Server) handleAgentSecret(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	node, only := r.URL.Query().Get("node"), r.URL.Query().Get("taskgroup")
	if node == "" {
		s.writeError(w, r, errorf(http.StatusBadRequest, "query parameter node is required: the node whose task group uses secret %s/%s", ns, name))
		return
	}
	ctx, cancel := requestContext(r)
	defer cancel()
	tgs, _, err := s.taskGroups().List(ctx, ns)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	allowed := slices.ContainsFunc(tgs, func(tg *v4.TaskGroup) bool {
		return tg.Spec.Node == node && (only == "" || tg.Metadata.Name == only) && usesSecret(&tg.Spec.Template.Spec, name)
	})
	if !allowed {
		s.writeError(w, r, errorf(http.StatusForbidden, "no task group of node %s uses secret %s/%s", node, ns, name))
		return
	}
	sec, err := store.Typed[*v4.Secret](s.store, v4.KindSecret).Get(ctx, ns, name)
	if errors.Is(err, store.ErrNotFound) {
		err = errorf(http.StatusNotFound, "secret %s/%s not found", ns, name)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sec)
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
