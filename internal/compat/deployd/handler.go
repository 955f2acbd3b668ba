// Package deployd serves Lain deployd's REST API (/api/...) as a front door of berth's
// /v1 API: pod groups are deployments, registered dependencies are dependencies, node
// drift and removal are moves and drains, the engine switches are berth's maintenance
// mode, notify callbacks are notify objects. Each request becomes /v1 calls (admitted,
// authorized and audited as such, v1call) and is answered as deployd answered: 202 with
// a check_url for accepted operations, {"message", "data"} for errors (docs/compat.md).
package deployd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/berthhq/berth/internal/compat/v1call"
)

// Prefix is where deployd's API is served.
const Prefix = "/api/"

// Handler serves deployd's routes over the /v1 handler.
type Handler struct {
	v1      v1call.Caller
	maxBody int64 // the server's limit of a request body
	mux     *http.ServeMux
}

// bigLists is how many lists longer than a page this API reads at once: each holds its
// items in memory while its answer is made.
const bigLists = 2

// New returns deployd's API over inner, the server's /v1 handler; maxBody is the server's
// limit of a request body.
func New(inner http.Handler, maxBody int64) *Handler {
	h := &Handler{v1: v1call.Caller{Inner: inner, Big: v1call.NewGate(bigLists)}, maxBody: maxBody, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /api/podgroups", h.getPodGroup)
	h.mux.HandleFunc("POST /api/podgroups", h.createPodGroup)
	h.mux.HandleFunc("DELETE /api/podgroups", h.deletePodGroup)
	h.mux.HandleFunc("PATCH /api/podgroups", h.patchPodGroup)
	h.mux.HandleFunc("GET /api/depends", h.getDepends)
	h.mux.HandleFunc("POST /api/depends", h.writeDepends(http.MethodPost))
	h.mux.HandleFunc("PUT /api/depends", h.writeDepends(http.MethodPut))
	h.mux.HandleFunc("DELETE /api/depends", h.deleteDepends)
	h.mux.HandleFunc("GET /api/nodes", h.getNodes)
	h.mux.HandleFunc("PATCH /api/nodes", h.driftNodes)
	h.mux.HandleFunc("DELETE /api/nodes", h.removeNode)
	h.mux.HandleFunc("GET /api/constraints", h.getConstraint)
	h.mux.HandleFunc("PATCH /api/constraints", h.patchConstraint)
	h.mux.HandleFunc("DELETE /api/constraints", h.deleteConstraint)
	h.mux.HandleFunc("GET /api/notifies", h.getNotifies)
	h.mux.HandleFunc("POST /api/notifies", h.addNotify)
	h.mux.HandleFunc("DELETE /api/notifies", h.removeNotify)
	h.mux.HandleFunc("GET /api/engine/config", h.getEngineConfig)
	h.mux.HandleFunc("PATCH /api/engine/config", h.patchEngineConfig)
	h.mux.HandleFunc("PATCH /api/engine/maintenance", h.patchMaintenance)
	h.mux.HandleFunc("GET /api/status", h.getStatus)
	h.mux.HandleFunc("PATCH /api/status", h.patchStatus)
	h.mux.HandleFunc("GET /api/cntstatushistory", h.getStatusHistory)
	h.mux.HandleFunc("GET /api/ports", h.getPorts)
	h.mux.HandleFunc("POST /api/ports", h.validatePorts)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no deployd route for %s %s (docs/compat.md lists them)", r.Method, r.URL.Path))
	})
	return h
}

// ServeHTTP refuses writes while the engine is read-only or in maintenance (403, outside
// /api/engine/ and /api/status, which turn it off), reads the body and serves the route.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead &&
		!strings.HasPrefix(r.URL.Path, "/api/engine/") && r.URL.Path != "/api/status" {
		// A token that may not read the engine still writes what it may: berth's own
		// maintenance guard then refuses the write itself (423, answered as 403 below).
		e, a := h.engine(r)
		if a != nil && a.Status != http.StatusForbidden {
			writeAnswerError(w, *a)
			return
		}
		if a == nil && e.Maintenance {
			writeError(w, http.StatusForbidden, "deployd is in readonly or maintenance mode (berth's maintenance: "+e.Reason+
				"): turn it off with PATCH /api/engine/config")
			return
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is over the limit of %d bytes", h.maxBody))
			return
		}
		writeError(w, http.StatusBadRequest, "read the body: "+err.Error())
		return
	}
	h.mux.ServeHTTP(w, v1call.WithBody(r, body))
}

// errorBody is deployd's error answer.
type errorBody struct {
	Message string `json:"message"`
	Data    any    `json:"data"`
}

// accepted is deployd's answer to an operation it runs in the background.
type accepted struct {
	Message  string   `json:"message"`
	CheckURL string   `json:"check_url,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"message":"encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Message: msg})
}

// writeAccepted answers 202 with what to poll; warnings go along as headers too.
func writeAccepted(w http.ResponseWriter, msg, checkURL string, warnings []string) {
	for _, v := range warnings {
		w.Header().Add("Warning", v)
	}
	writeJSON(w, http.StatusAccepted, accepted{Message: msg, CheckURL: checkURL, Warnings: v1call.WarningTexts(warnings)})
}

// writeAnswerError answers a failed /v1 call with deployd's status for it: 400 for bad
// input, 405 for what exists already or is refused (in use), 423 for an operation in
// progress, 403 for berth's maintenance mode (deployd's read-only); the others as /v1
// answered.
func writeAnswerError(w http.ResponseWriter, a v1call.Answer) {
	status, msg := a.Status, a.Message()
	switch {
	case status == http.StatusUnprocessableEntity:
		status = http.StatusBadRequest
	case status == http.StatusConflict:
		status = http.StatusMethodNotAllowed
	case status == http.StatusLocked && strings.HasPrefix(msg, maintenancePrefix):
		status = http.StatusForbidden
	}
	writeError(w, status, msg)
}

// maintenancePrefix starts berth's refusal of a write in maintenance mode.
const maintenancePrefix = "berth is in maintenance mode"
