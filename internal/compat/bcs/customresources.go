package bcs

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/berthhq/berth/internal/compat/v1call"
)

// Custom resources (docs/compat.md): BCS's driver passed /customresourcedefinitions and
// /customresources/{group}/{version}/... to a Kubernetes API server, and bcs-client reads
// Kubernetes' answers: the object itself, or a Status object (kind "Status") with the
// message of a failure, whatever the HTTP status. berth keeps them itself (docs/api.md,
// "Custom resources"): each route is one /v1 call, under the same ACL kinds and bounds,
// answered in Kubernetes' shapes.

func (h *Handler) customResourceRoutes() {
	h.mux.HandleFunc("GET /customresourcedefinitions", h.crdCall)
	h.mux.HandleFunc("POST /customresourcedefinitions", h.crdCall)
	h.mux.HandleFunc("GET /customresourcedefinitions/{name}", h.crdCall)
	h.mux.HandleFunc("PUT /customresourcedefinitions/{name}", h.crdCall)
	h.mux.HandleFunc("DELETE /customresourcedefinitions/{name}", h.crdCall)
	const ns = "/customresources/{group}/{version}/namespaces/{ns}/{plural}"
	h.mux.HandleFunc("GET /customresources/{group}/{version}/{plural}", h.crCall)
	h.mux.HandleFunc("GET "+ns, h.crCall)
	h.mux.HandleFunc("POST "+ns, h.crCall)
	h.mux.HandleFunc("GET "+ns+"/{name}", h.crCall)
	h.mux.HandleFunc("PUT "+ns+"/{name}", h.crCall)
	h.mux.HandleFunc("DELETE "+ns+"/{name}", h.crCall)
}

// crdCall serves a definition route as the /v1 route of the same path.
func (h *Handler) crdCall(w http.ResponseWriter, r *http.Request) {
	path := v1call.Path("customresourcedefinitions")
	if name := r.PathValue("name"); name != "" {
		path = v1call.Path("customresourcedefinitions", name)
	}
	a := h.v1.Call(r, r.Method, path, r.URL.Query(), bodyOf(r))
	if a.OK() && r.Method == http.MethodGet && r.PathValue("name") == "" {
		a.Body = relist(a.Body, "apiextensions.k8s.io/v1beta1", "CustomResourceDefinitionList")
	}
	writeKube(w, a)
}

// crCall serves a resource route on the /v1 object routes of the definition
// plural.group. The path's version is the definition's one version: a document of another
// apiVersion is refused by /v1.
func (h *Handler) crCall(w http.ResponseWriter, r *http.Request) {
	crd := r.PathValue("plural") + "." + r.PathValue("group")
	var path string
	switch ns, name := r.PathValue("ns"), r.PathValue("name"); {
	case ns == "":
		path = v1call.Path(crd)
	case name == "":
		path = v1call.Path("namespaces", ns, crd)
	default:
		path = v1call.Path("namespaces", ns, crd, name)
	}
	a := h.v1.Call(r, r.Method, path, r.URL.Query(), bodyOf(r))
	if a.OK() && r.Method == http.MethodGet && r.PathValue("name") == "" {
		a.Body = relist(a.Body, r.PathValue("group")+"/"+r.PathValue("version"), "List")
	}
	writeKube(w, a)
}

// bodyOf is the request's body for a write, nil for a read or delete.
func bodyOf(r *http.Request) []byte {
	if r.Method == http.MethodPost || r.Method == http.MethodPut {
		return v1call.Body(r)
	}
	return nil
}

// relist gives a /v1 list Kubernetes' list shape.
func relist(body []byte, apiVersion, kind string) []byte {
	var l struct {
		Items []json.RawMessage `json:"items"`
	}
	if json.Unmarshal(body, &l) != nil {
		return body
	}
	if l.Items == nil {
		l.Items = []json.RawMessage{}
	}
	out, err := json.Marshal(map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{}, "items": l.Items})
	if err != nil {
		return body
	}
	return out
}

// kubeStatus is Kubernetes' Status object, its answer to a failed call.
type kubeStatus struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata"`
	Status     string         `json:"status"`
	Message    string         `json:"message"`
	Reason     string         `json:"reason"`
	Code       int            `json:"code"`
}

// kubeReasons are Kubernetes' reasons of the statuses /v1 answers these routes with.
var kubeReasons = map[int]string{
	http.StatusBadRequest:          "BadRequest",
	http.StatusUnauthorized:        "Unauthorized",
	http.StatusForbidden:           "Forbidden",
	http.StatusNotFound:            "NotFound",
	http.StatusMethodNotAllowed:    "MethodNotAllowed",
	http.StatusConflict:            "Conflict",
	http.StatusUnprocessableEntity: "Invalid",
	http.StatusTooManyRequests:     "TooManyRequests",
	http.StatusServiceUnavailable:  "ServiceUnavailable",
}

// writeKube answers a /v1 answer as Kubernetes would: the object, or a Status.
func writeKube(w http.ResponseWriter, a v1call.Answer) {
	for _, v := range a.Warnings {
		w.Header().Add("Warning", v)
	}
	w.Header().Set("Content-Type", "application/json")
	if a.OK() {
		w.WriteHeader(a.Status)
		w.Write(a.Body)
		return
	}
	reason := kubeReasons[a.Status]
	if reason == "" {
		reason = strings.ReplaceAll(http.StatusText(a.Status), " ", "")
	}
	if a.Status == http.StatusConflict && strings.Contains(a.Message(), "already exists") {
		reason = "AlreadyExists"
	}
	body, _ := json.Marshal(kubeStatus{APIVersion: "v1", Kind: "Status", Metadata: map[string]any{}, Status: "Failure",
		Message: a.Message(), Reason: reason, Code: a.Status})
	w.WriteHeader(a.Status)
	w.Write(body)
}
