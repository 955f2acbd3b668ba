package server

import (
	"github.com/berthhq/berth/internal/httpapi"

	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/berthhq/berth/api/cluster"
)

// encryptionRoutes: POST /v1/encryption/rewrap seals every secret again with the first
// key of the servers' encryption key file, so an old key can be dropped
// (docs/security.md, Rotating the key).
func (s *Server) encryptionRoutes(mux *httpapi.Mux) {
	mux.Handle("POST /v1/encryption/rewrap", adminCluster, s.handleRewrap)
}

// refuseBody is the 400 for a request with a body on a route that takes none (a body
// there is a client that means something else), or nil.
func refuseBody(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1024))
	if err == nil && len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	return httpapi.Errorf(http.StatusBadRequest, "%s %s takes no body", r.Method, r.URL.Path)
}

// rewrapTimeout bounds one rewrap: one conditional write per secret value.
const rewrapTimeout = 5 * time.Minute

func (s *Server) handleRewrap(w http.ResponseWriter, r *http.Request) error {
	if err := refuseBody(w, r); err != nil {
		return err
	}
	kr := s.store.Keyring()
	if kr == nil {
		return httpapi.Errorf(http.StatusConflict, "this server encrypts nothing: it has no encryption key file")
	}
	// One rewrap at a time: each reads every secret, so callers repeating it must not
	// multiply that.
	if !s.rewrapping.TryLock() {
		return httpapi.Errorf(http.StatusConflict, "a rewrap is already running on this server; try again when it ends")
	}
	defer s.rewrapping.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), rewrapTimeout)
	defer cancel()
	n, err := s.store.Rewrap(ctx)
	if err != nil {
		return fmt.Errorf("rewrap secrets after %d: %w", n, err)
	}
	s.log.Info("secrets rewrapped", "key", kr.Primary(), "values", n, "remote", r.RemoteAddr)
	httpapi.WriteJSON(w, http.StatusOK, cluster.Rewrapped{Key: kr.Primary(), Rewrapped: n})
	return nil
}
