package server

import (
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/berthhq/berth/internal/compat/bcs"
	"github.com/berthhq/berth/internal/compat/deployd"
	"github.com/berthhq/berth/internal/httpapi"

	v4 "github.com/berthhq/berth/api/v4"
)

// Engine maintenance (docs/maintenance.md): GET and PUT /v1/engine. While maintenance is
// on, maintenanceGuard refuses writes with 423 and the controllers restart nothing.

// engineRequest is the body of PUT /v1/engine; maintenance is required so that a typo
// ("maintenace") cannot turn it off by omission.
type engineRequest struct {
	Maintenance *bool  `json:"maintenance"`
	Reason      string `json:"reason"`
}

func (s *Server) handleEngineGet(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	e, err := s.store.Engine(ctx)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, e)
	return nil
}

func (s *Server) handleEnginePut(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req engineRequest
	if err := httpapi.DecodeStrict(body, &req); err != nil {
		return httpapi.Errorf(http.StatusBadRequest, "engine body: %v", err).
			WithDetail("maintenance", `send {"maintenance": true, "reason": "why"} or {"maintenance": false}`)
	}
	if ae := checkEngineRequest(req); ae != nil {
		return ae
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	e, err := s.store.SetEngine(ctx, v4.Engine{Maintenance: *req.Maintenance, Reason: req.Reason})
	if err != nil {
		return err
	}
	reason, msg := "MaintenanceOff", "engine maintenance off: writes and restarts resume"
	if e.Maintenance {
		reason, msg = "MaintenanceOn", "engine maintenance on ("+reasonText(e)+"): writes are refused and nothing is restarted"
	}
	if err := s.store.RecordEvent(ctx, v4.Event{Type: v4.EventWarning, Reason: reason, Name: "engine", Message: msg}); err != nil {
		s.log.Warn("cannot record event", "reason", reason, "err", err)
	}
	httpapi.WriteJSON(w, http.StatusOK, e)
	return nil
}

// checkEngineRequest names the field at fault in a bad engine request.
func checkEngineRequest(req engineRequest) *httpapi.Error {
	switch {
	case req.Maintenance == nil:
		return httpapi.Errorf(http.StatusUnprocessableEntity, "engine: maintenance is required").WithDetail("maintenance", "must be true or false")
	case len(req.Reason) > v4.MaxEngineReason:
		return httpapi.Errorf(http.StatusUnprocessableEntity, "engine: reason is too long").
			WithDetail("reason", fmt.Sprintf("must be at most %d bytes, got %d", v4.MaxEngineReason, len(req.Reason)))
	case strings.ContainsFunc(req.Reason, unicode.IsControl):
		return httpapi.Errorf(http.StatusUnprocessableEntity, "engine: reason contains control characters").
			WithDetail("reason", "must be one line of text")
	}
	return nil
}

func reasonText(e v4.Engine) string {
	if e.Reason == "" {
		return "no reason given"
	}
	return "reason: " + e.Reason
}

// maintenanceGuard refuses every request that changes something while the engine is in
// maintenance, except the engine endpoint itself (to turn it off), the agents' routes
// (agents keep reporting what runs) and requests that only read: dry-run plans and exec
// sessions into running task groups, which operators need while they work.
func (s *Server) maintenanceGuard(next http.Handler) http.Handler {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		if !mutating(r) {
			next.ServeHTTP(w, r)
			return nil
		}
		e, err := s.store.Engine(r.Context())
		if err != nil {
			return err
		}
		if e.Maintenance {
			return httpapi.Errorf(http.StatusLocked,
				"berth is in maintenance mode since %s (%s): writes are refused; turn it off with `berth maintenance off` (PUT /v1/engine {\"maintenance\": false})",
				e.Since.Format("2006-01-02 15:04:05 MST"), reasonText(e))
		}
		next.ServeHTTP(w, r)
		return nil
	})
}

// mutating tells whether a request changes state that maintenance freezes.
func mutating(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	p := r.URL.Path
	switch {
	case p == "/v1/engine", strings.HasPrefix(p, "/v1/agent/"), p == "/v1/plan":
		return false
	case strings.HasPrefix(p, bcs.DriverPrefix+"/"), strings.HasPrefix(p, bcs.GatewayPrefix+"/"), strings.HasPrefix(p, bcs.StoragePrefix+"/"), strings.HasPrefix(p, deployd.Prefix):
		return false // guarded call by call (compat.go), answered in BCS's envelope
	case p == "/v1/cluster/recover":
		// Frees etcd's space: with etcd full, maintenance cannot be turned off (a write).
		return false
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/v1/namespaces/") && strings.HasSuffix(p, "/exec"):
		return false
	}
	return true
}
