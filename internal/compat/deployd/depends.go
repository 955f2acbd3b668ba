package deployd

import (
	"encoding/json"
	"net/http"
	"net/url"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/v1call"
)

// Dependencies registered through /api/depends are berth dependencies in
// Namespace; berth starts their pods where dependents land, shares and counts
// them, and collects them when unused, as deployd's depends controller did.

// DependsWithPods is deployd's answer for a dependency: its spec, and its pods by the
// namespace that shares them (the node's name for node-level ones).
type DependsWithPods struct {
	Spec PodSpec
	Pods map[string][]Pod
}

func dependsURL(name string) string { return "/api/depends?name=" + url.QueryEscape(name) }

func (h *Handler) dependencyPath(w http.ResponseWriter, r *http.Request) (string, bool) {
	name, err := BerthName("name", r.URL.Query().Get("name"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "query parameter "+err.Error())
		return "", false
	}
	return v1call.Path("namespaces", Namespace, "dependencies", name), true
}

func (h *Handler) getDepends(w http.ResponseWriter, r *http.Request) {
	path, ok := h.dependencyPath(w, r)
	if !ok {
		return
	}
	d, a := v1call.Get[v4.Dependency](h.v1, r, path)
	if a != nil {
		writeAnswerError(w, *a)
		return
	}
	out := DependsWithPods{Spec: h.podSpecOf(r, &d.Spec.Template, d.Constraint, d.KillPolicy, d.Metadata), Pods: map[string][]Pod{}}
	tgs, a := v1call.List[*v4.TaskGroup](h.v1, r, v1call.Path("namespaces", Namespace, "taskgroups"))
	if a != nil {
		writeAnswerError(w, *a)
		return
	}
	byName := map[string]*v4.TaskGroup{}
	for _, tg := range tgs {
		if tg.Spec.Owner.Kind == v4.KindDependency && tg.Spec.Owner.Name == d.Metadata.Name {
			byName[tg.Metadata.Name] = tg
		}
	}
	for _, p := range d.Status.Pods {
		scope := p.Scope
		if p.Policy == "node" {
			scope = p.Node
		}
		if tg := byName[p.TaskGroup]; tg != nil {
			out.Pods[scope] = append(out.Pods[scope], podOf(tg))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// writeDepends registers (POST) or updates (PUT) a dependency spec; an update replaces
// every pod of it.
func (h *Handler) writeDepends(method string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var spec PodSpec
		if err := decodeStrict(v1call.Body(r), &spec, "PodSpec"); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		c, err := dependencyOf(&spec)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		body, _ := json.Marshal(c.obj)
		path := v1call.Path("namespaces", Namespace, "dependencies")
		if method == http.MethodPut {
			path = v1call.Path("namespaces", Namespace, "dependencies", c.obj.GetMeta().Name)
		}
		a := h.v1.Call(r, method, path, nil, body)
		if !a.OK() {
			writeAnswerError(w, a)
			return
		}
		writeAccepted(w, "dependency "+map[string]string{http.MethodPost: "registered", http.MethodPut: "updating"}[method],
			dependsURL(spec.Name), warningsOf(c.warnings, a.Warnings))
	}
}

// deleteDepends removes a dependency: refused while pods use it, unless force=true.
func (h *Handler) deleteDepends(w http.ResponseWriter, r *http.Request) {
	path, ok := h.dependencyPath(w, r)
	if !ok {
		return
	}
	force, err := boolQuery(r, "force", false)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var q url.Values
	if force {
		q = url.Values{"force": {"true"}}
	}
	a := h.v1.Call(r, http.MethodDelete, path, q, nil)
	if !a.OK() {
		writeAnswerError(w, a)
		return
	}
	writeAccepted(w, "dependency removing", dependsURL(r.URL.Query().Get("name")), nil)
}
