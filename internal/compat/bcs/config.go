package bcs

import (
	"encoding/json"
	"net/http"

	"github.com/berthhq/berth/internal/compat/v1call"
	"github.com/berthhq/berth/internal/redact"
)

// configRoutes serves configmaps, secrets and services: BCS creates and updates them with
// the document in the body and deletes them by name.
func (h *Handler) configRoutes() {
	for _, plural := range []string{"configmaps", "secrets", "services"} {
		base := "/namespaces/{ns}/" + plural
		h.mux.HandleFunc("POST "+base, h.create(plural))
		h.mux.HandleFunc("PUT "+base, h.update(plural))
		del := h.delete(plural)
		if plural != "services" {
			del = h.deleteConfig(plural)
		}
		h.mux.HandleFunc("DELETE "+base+"/{name}", del)
		h.mux.HandleFunc("GET "+base, h.listObjects(plural))
		h.mux.HandleFunc("GET "+base+"/{name}", h.getObject(plural))
	}
}

// listObjects answers the /v1 list's items as they are: configmaps, secrets, services
// and daemonsets are BCS's own documents in berth.
func (h *Handler) listObjects(plural string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a := h.v1.Call(r, http.MethodGet, v1call.Path("namespaces", r.PathValue("ns"), plural), nil, nil)
		if !a.OK() {
			writeFailure(w, failureOf(a, false))
			return
		}
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(a.Body, &list); err != nil {
			writeFailure(w, failure{code: CodeScheduler, message: "read list: " + err.Error()})
			return
		}
		if list.Items == nil {
			list.Items = []json.RawMessage{}
		}
		for i, it := range list.Items {
			list.Items[i] = masked(plural, it)
		}
		writeSuccess(w, list.Items, nil)
	}
}

// getObject answers one object as /v1 has it.
func (h *Handler) getObject(plural string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a := h.v1.Call(r, http.MethodGet, v1call.Path("namespaces", r.PathValue("ns"), plural, r.PathValue("name")), nil, nil)
		if !a.OK() {
			writeFailure(w, failureOf(a, false))
			return
		}
		writeSuccess(w, masked(plural, a.Body), nil)
	}
}

// masked is a document of plural with its credentials masked (a daemonset's image pull
// password, a configmap's remote file's password): whoever may read it sees them masked,
// as BCS showed them. A secret's values are its readers' to read.
func masked(plural string, doc json.RawMessage) json.RawMessage {
	if plural == "secrets" {
		return doc
	}
	return redact.Document(doc)
}
