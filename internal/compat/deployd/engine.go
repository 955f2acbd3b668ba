package deployd

import (
	"encoding/json"
	"net/http"

	"github.com/berthhq/berth/internal/compat/v1call"
)

// deployd's engine had two switches, readonly (the API refuses writes) and maintenance
// (no repairs, writes refused), and could be stopped (no repairs). berth has one: its
// maintenance mode refuses writes and stops the controllers' repairs. Each deployd switch
// reads it and turns it on or off.

// engineState is /v1/engine's answer.
type engineState struct {
	Maintenance bool   `json:"maintenance"`
	Reason      string `json:"reason"`
}

// EngineConfig is deployd's engine configuration.
type EngineConfig struct {
	ReadOnly    bool `json:"readonly"`
	Maintenance bool `json:"maintenance"`
}

func (h *Handler) engine(r *http.Request) (*engineState, *v1call.Answer) {
	return v1call.Get[engineState](h.v1, r, "/v1/engine")
}

// setEngine turns berth's maintenance on or off.
func (h *Handler) setEngine(w http.ResponseWriter, r *http.Request, on bool, reason string) bool {
	body, _ := json.Marshal(map[string]any{"maintenance": on, "reason": reason})
	a := h.v1.Call(r, http.MethodPut, "/v1/engine", nil, body)
	if !a.OK() {
		writeAnswerError(w, a)
		return false
	}
	return true
}

func (h *Handler) getEngineConfig(w http.ResponseWriter, r *http.Request) {
	e, a := h.engine(r)
	if a != nil {
		writeAnswerError(w, *a)
		return
	}
	writeJSON(w, http.StatusOK, EngineConfig{ReadOnly: e.Maintenance, Maintenance: e.Maintenance})
}

// patchEngineConfig merges the body into the configuration, as deployd did.
func (h *Handler) patchEngineConfig(w http.ResponseWriter, r *http.Request) {
	var patch struct {
		ReadOnly    *bool `json:"readonly"`
		Maintenance *bool `json:"maintenance"`
	}
	if err := decodeStrict(v1call.Body(r), &patch, "engine configuration {\"readonly\", \"maintenance\"}"); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	e, a := h.engine(r)
	if a != nil {
		writeAnswerError(w, *a)
		return
	}
	on := e.Maintenance
	reason := "deployd API"
	switch {
	case patch.ReadOnly != nil && patch.Maintenance != nil:
		on = *patch.ReadOnly || *patch.Maintenance
	case patch.ReadOnly != nil:
		on, reason = *patch.ReadOnly, "deployd API: readonly"
	case patch.Maintenance != nil:
		on, reason = *patch.Maintenance, "deployd API: maintenance"
	}
	if !h.setEngine(w, r, on, reason) {
		return
	}
	writeJSON(w, http.StatusOK, EngineConfig{ReadOnly: on, Maintenance: on})
}

// patchMaintenance serves PATCH /api/engine/maintenance?on=true|false.
func (h *Handler) patchMaintenance(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("on") == "" {
		writeError(w, http.StatusBadRequest, "query parameter on is required (true or false)")
		return
	}
	on, err := boolQuery(r, "on", false)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if h.setEngine(w, r, on, "deployd API: maintenance") {
		writeJSON(w, http.StatusOK, EngineConfig{ReadOnly: on, Maintenance: on})
	}
}

// engineStatus is deployd's engine switch: PATCH takes "start" or "stop", GET answers
// "started" or "stopped" (the Lain console deploys only while it reads "started").
type engineStatus struct {
	Status string `json:"status"`
}

// deployd's engine states, as GET /api/status answered them.
const (
	statusStarted = "started"
	statusStopped = "stopped"
)

func (h *Handler) getStatus(w http.ResponseWriter, r *http.Request) {
	e, a := h.engine(r)
	if a != nil {
		writeAnswerError(w, *a)
		return
	}
	st := engineStatus{Status: statusStarted}
	if e.Maintenance {
		st.Status = statusStopped
	}
	writeJSON(w, http.StatusOK, st)
}

// patchStatus starts or stops the engine: stop is berth's maintenance, which also
// refuses writes (deployd's stopped engine took them and did nothing). deployd answered
// 202 with the JSON string "Accept", not its usual {"message", "check_url"}.
func (h *Handler) patchStatus(w http.ResponseWriter, r *http.Request) {
	var st engineStatus
	if err := decodeStrict(v1call.Body(r), &st, "status {\"status\": \"start\" or \"stop\"}"); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if st.Status != "start" && st.Status != "stop" {
		writeError(w, http.StatusBadRequest, "status: must be \"start\" or \"stop\", got "+jsonString(st.Status))
		return
	}
	if h.setEngine(w, r, st.Status == "stop", "deployd API: engine stopped") {
		writeJSON(w, http.StatusAccepted, "Accept")
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
