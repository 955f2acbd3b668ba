package server

import (
	"errors"
	"net/http"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/jointoken"
	"github.com/berthhq/berth/internal/store"
)

// Join tokens (docs/security.md, Join tokens): created, listed with their expiry, and
// revoked. The whole token is shown once, in the answer that creates it.

// defaultAgentTokenTTL is an agent token's lifetime when the request gives none.
const defaultAgentTokenTTL = "24h"

// maxJoinTokenTTL bounds a token's lifetime when one is given.
const maxJoinTokenTTL = 10 * 365 * 24 * time.Hour

func (s *Server) joinTokenRoutes(mux *httpapi.Mux) {
	mux.Handle("POST /v1/jointokens", adminCluster, s.handleJoinTokenCreate)
	mux.Handle("GET /v1/jointokens", adminCluster, s.handleJoinTokenList)
	mux.Handle("DELETE /v1/jointokens/{id}", adminCluster, s.handleJoinTokenRevoke)
}

func (s *Server) handleJoinTokenCreate(w http.ResponseWriter, r *http.Request) error {
	var req v4.JoinTokenRequest
	if err := s.bodyReader.Decode(w, r, &req); err != nil {
		return err
	}
	now := time.Now().UTC()
	rec := &store.JoinToken{Role: req.Role, Description: req.Description, Created: now}
	if rec.Role == "" {
		rec.Role = v4.JoinRoleAgent
	}
	if rec.Role != v4.JoinRoleAgent && rec.Role != v4.JoinRoleServer {
		return httpapi.Errorf(http.StatusUnprocessableEntity, "role %q: use %s or %s", req.Role, v4.JoinRoleAgent, v4.JoinRoleServer).
			WithDetail("role", "must be agent or server")
	}
	if len(req.Description) > 256 {
		return httpapi.Errorf(http.StatusUnprocessableEntity, "description: at most 256 characters, got %d", len(req.Description)).
			WithDetail("description", "too long")
	}
	if req.Node != "" {
		if rec.Role != v4.JoinRoleAgent {
			return httpapi.Errorf(http.StatusUnprocessableEntity, "node: only an agent token is bound to a node").WithDetail("node", "needs role agent")
		}
		if err := v4.CheckNodeName(req.Node); err != nil {
			return httpapi.Errorf(http.StatusUnprocessableEntity, "node: %v", err).WithDetail("node", err.Error())
		}
		rec.Node = req.Node
	}
	ttl := req.TTL
	if ttl == "" && rec.Role == v4.JoinRoleAgent {
		ttl = defaultAgentTokenTTL // tokens handed to agents expire, as kubeadm's
	}
	expires, ok := expiry(ttl, now)
	if !ok {
		return httpapi.Errorf(http.StatusUnprocessableEntity, "ttl %q: want a duration such as 24h, up to 10 years (0: never expires)", req.TTL).
			WithDetail("ttl", "not a duration in range")
	}
	rec.Expires = expires
	tok, err := jointoken.New()
	if err != nil {
		return err
	}
	rec.ID, rec.SecretHash = tok.ID, tok.SecretHash()
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	if err := s.store.CreateJoinToken(ctx, rec); err != nil {
		return err
	}
	info := tokenInfo(rec, now)
	info.Token = tok.WithPin(s.ca.Hash())
	httpapi.WriteJSON(w, http.StatusCreated, info)
	return nil
}

func (s *Server) handleJoinTokenList(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	toks, err := s.store.JoinTokens(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	out := make([]v4.JoinTokenInfo, 0, len(toks))
	for _, t := range toks {
		out = append(out, tokenInfo(t, now))
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"items": out})
	return nil
}

// handleJoinTokenRevoke deletes a token by id ("abc123" or "berth-abc123"). Certificates
// issued with it stay valid: revoking stops new joins.
func (s *Server) handleJoinTokenRevoke(w http.ResponseWriter, r *http.Request) error {
	id := strings.TrimPrefix(r.PathValue("id"), "berth-")
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	err := s.store.DeleteJoinToken(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		err = httpapi.Errorf(http.StatusNotFound, "join token berth-%s not found", id)
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// expiry is when a token given ttl at now expires: zero for "" or "0" (never); false for
// a ttl that is not a duration from 0 to 10 years.
func expiry(ttl string, now time.Time) (time.Time, bool) {
	if ttl == "" {
		return time.Time{}, true
	}
	d, err := time.ParseDuration(ttl)
	if err != nil || d < 0 || d > maxJoinTokenTTL {
		return time.Time{}, false
	}
	if d == 0 {
		return time.Time{}, true
	}
	return now.Add(d), true
}

func tokenInfo(t *store.JoinToken, now time.Time) v4.JoinTokenInfo {
	return v4.JoinTokenInfo{ID: "berth-" + t.ID, Role: t.Role, Description: t.Description, Created: t.Created,
		Expires: t.Expires, Expired: t.Expired(now), Node: t.Node}
}
