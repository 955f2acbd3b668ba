package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// encryptionRoutes: POST /v1/encryption/rewrap seals every secret again with the first
// key of the servers' encryption key file, so an old key can be dropped
// (docs/security.md, Rotating the key).
func (s *Server) encryptionRoutes(mux *routeMux) {
	mux.handle("POST /v1/encryption/rewrap", adminCluster, s.handleRewrap)
}

// refuseBody answers 400 to a request with a body on a route that takes none (a body
// there is a client that means something else), and reports whether it did.
func (s *Server) refuseBody(w http.ResponseWriter, r *http.Request) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1024))
	if err == nil && len(bytes.TrimSpace(body)) == 0 {
		return false
	}
	s.writeError(w, r, errorf(http.StatusBadRequest, "%s %s takes no body", r.Method, r.URL.Path))
	return true
}

// rewrapTimeout bounds one rewrap: one conditional write per secret value.
const rewrapTimeout = 5 * time.Minute

// rewrapped is the answer of POST /v1/encryption/rewrap.
type rewrapped struct {
	Key       string `json:"key"`
	Rewrapped int    `json:"rewrapped"`
}

func (s *Server) handleRewrap(w http.ResponseWriter, r *http.Request) {
	if s.refuseBody(w, r) {
		return
	}
	kr := s.store.Keyring()
	if kr == nil {
		s.writeError(w, r, errorf(http.StatusConflict, "this server encrypts nothing: it has no encryption key file"))
		return
	}
	// One rewrap at a time: each reads every secret, so callers repeating it must not
	// multiply that.
	if !s.rewrapping.TryLock() {
		s.writeError(w, r, errorf(http.StatusConflict, "a rewrap is already running on this server; try again when it ends"))
		return
	}
	defer s.rewrapping.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), rewrapTimeout)
	defer cancel()
	n, err := s.store.Rewrap(ctx)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("rewrap secrets after %d: %w", n, err))
		return
	}
	s.log.Info("secrets rewrapped", "key", kr.Primary(), "values", n, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, rewrapped{Key: kr.Primary(), Rewrapped: n})
}
