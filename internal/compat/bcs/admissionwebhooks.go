package bcs

import (
	"encoding/json"
	"net/http"

	"github.com/berthhq/berth/internal/compat/v1call"
)

// BCS's admission webhook routes (docs/compat.md; docs/policy.md, "Admission
// webhooks"): its AdmissionWebhookConfiguration is written and read through berth's
// cluster-wide /v1/admissionwebhooks, which take BCS's shape as it is. BCS kept a
// configuration in a namespace; berth's are the cluster's, written by an administrator
// (admin on cluster), so the path's namespace is only where BCS's clients send them.
func (h *Handler) admissionWebhookRoutes() {
	const one = "/namespaces/{ns}/admissionwebhook"
	h.mux.HandleFunc("POST "+one, h.webhookWrite)
	h.mux.HandleFunc("PUT "+one, h.webhookWrite)
	h.mux.HandleFunc("GET "+one+"/{name}", h.webhookCall)
	h.mux.HandleFunc("DELETE "+one+"/{name}", h.webhookCall)
	h.mux.HandleFunc("GET /admissionwebhooks", h.webhookCall)
}

// webhookWrite creates (POST) or replaces (PUT) the configuration its body names.
func (h *Handler) webhookWrite(w http.ResponseWriter, r *http.Request) {
	body := v1call.Body(r)
	var head struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &head); err != nil || head.Metadata.Name == "" {
		writeFailure(w, failure{code: CodeBadRequestData, message: "the body is not an AdmissionWebhookConfiguration with metadata.name"})
		return
	}
	path := v1call.Path("admissionwebhooks")
	if r.Method == http.MethodPut {
		path = v1call.Path("admissionwebhooks", head.Metadata.Name)
	}
	a := h.v1.Call(r, r.Method, path, nil, body)
	h.finish(w, a, r.Method == http.MethodPost, nil)
}

// webhookCall reads, lists or deletes, answering the configuration (or the list's
// items) as data.
func (h *Handler) webhookCall(w http.ResponseWriter, r *http.Request) {
	path := v1call.Path("admissionwebhooks")
	if name := r.PathValue("name"); name != "" {
		path = v1call.Path("admissionwebhooks", name)
	}
	a := h.v1.Call(r, r.Method, path, nil, nil)
	if !a.OK() {
		writeFailure(w, failureOf(a, false))
		return
	}
	data := json.RawMessage(a.Body)
	if r.PathValue("name") == "" {
		var l struct {
			Items json.RawMessage `json:"items"`
		}
		if json.Unmarshal(a.Body, &l) == nil {
			data = l.Items
		}
	}
	writeSuccess(w, data, a.Warnings)
}
