package server

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// Users' tokens and policies (docs/security.md, Users and policies), whoami and can-i.

func (s *Server) aclRoutes(mux *httpapi.Mux) {
	mux.Handle("GET /v1/acl/whoami", httpapi.AnyUser, s.handleWhoami)
	mux.Handle("POST /v1/acl/can-i", httpapi.AnyUser, s.handleCanI)
	mux.Handle("POST /v1/acl/tokens", adminCluster, s.handleACLTokenCreate)
	mux.Handle("GET /v1/acl/tokens", adminCluster, s.handleACLTokenList)
	mux.Handle("DELETE /v1/acl/tokens/{id}", adminCluster, s.handleACLTokenRevoke)
	mux.Handle("POST /v1/acl/tokens/{id}/certificate", adminCluster, s.handleACLCertificate)
	mux.Handle("PUT /v1/acl/policies/{name}", adminCluster, s.handleACLPolicyPut)
	mux.Handle("GET /v1/acl/policies", adminCluster, s.handleACLPolicyList)
	mux.Handle("GET /v1/acl/policies/{name}", adminCluster, s.handleACLPolicyGet)
	mux.Handle("DELETE /v1/acl/policies/{name}", adminCluster, s.handleACLPolicyDelete)
}

func (s *Server) handleWhoami(w http.ResponseWriter, r *http.Request) error {
	watch, err := httpapi.BoolParam(r.URL.Query().Get("watch"), "watch")
	if err != nil {
		return err
	}
	if watch {
		return s.watchWhoami(w, r)
	}
	httpapi.WriteJSON(w, http.StatusOK, whoamiOf(identityOf(r)))
	return nil
}

func tokenView(t *acl.Token) v4.ACLTokenInfo {
	return v4.ACLTokenInfo{ID: "berth-acl-" + t.ID, Name: t.Name, Policies: append([]string{}, t.Policies...), Management: t.Management,
		Created: t.Created, Expires: t.Expires}
}

func (s *Server) handleACLTokenCreate(w http.ResponseWriter, r *http.Request) error {
	var req v4.ACLTokenRequest
	if err := s.bodyReader.Decode(w, r, &req); err != nil {
		return err
	}
	now := time.Now().UTC()
	t := &acl.Token{Name: req.Name, Policies: req.Policies, Management: req.Management, Created: now}
	bad := httpapi.Errorf(http.StatusUnprocessableEntity, "the token is invalid")
	if len(req.Name) > 128 {
		bad.WithDetail("name", "at most 128 characters")
	}
	if len(req.Policies) == 0 && !req.Management {
		bad.WithDetail("policies", "give at least one policy (or management: true)")
	}
	if len(req.Policies) > 32 {
		bad.WithDetail("policies", "at most 32")
	}
	if expires, ok := expiry(req.TTL, now); ok {
		t.Expires = expires
	} else {
		bad.WithDetail("ttl", "want a duration such as 720h, up to 10 years (0: never expires)")
	}
	if len(bad.Details) > 0 {
		return bad
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	for i, name := range req.Policies { // a token naming a policy that does not exist is a typo
		if _, err := s.store.ACLPolicy(ctx, name); errors.Is(err, store.ErrNotFound) {
			return httpapi.Errorf(http.StatusUnprocessableEntity, "policy %q does not exist", name).WithDetail("policies["+strconv.Itoa(i)+"]", "no such policy")
		} else if err != nil {
			return err
		}
	}
	sec, err := acl.NewSecret()
	if err != nil {
		return err
	}
	t.ID, t.SecretHash = sec.ID, acl.HashOf(sec)
	if err := s.store.CreateACLToken(ctx, t); err != nil {
		return err
	}
	out := tokenView(t)
	out.Secret = sec.String()
	httpapi.WriteJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) handleACLTokenList(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	toks, err := s.store.ACLTokens(ctx)
	if err != nil {
		return err
	}
	out := make([]v4.ACLTokenInfo, 0, len(toks))
	for _, t := range toks {
		out = append(out, tokenView(t))
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"items": out})
	return nil
}

func (s *Server) handleACLTokenRevoke(w http.ResponseWriter, r *http.Request) error {
	id := strings.TrimPrefix(r.PathValue("id"), "berth-acl-")
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	if err := s.store.DeleteACLToken(ctx, id); errors.Is(err, store.ErrNotFound) {
		return httpapi.Errorf(http.StatusNotFound, "token berth-acl-%s not found", id)
	} else if err != nil {
		return err
	}
	s.aclCache.forget()
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// maxPolicyBytes bounds a policy document: with at most 1,000 policies, they cannot fill
// etcd.
const maxPolicyBytes = 64 << 10

// handleACLPolicyPut creates or replaces a policy from a JSON or YAML document of kind
// acl-policy, named as the path.
func (s *Server) handleACLPolicyPut(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err == nil && len(body) > maxPolicyBytes {
		err = httpapi.Errorf(http.StatusRequestEntityTooLarge, "a policy document is at most %d bytes, got %d", maxPolicyBytes, len(body))
	}
	if err != nil {
		return err
	}
	var p acl.Policy
	dec := yaml.NewDecoder(bytes.NewReader(body))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		return httpapi.Errorf(http.StatusBadRequest, "the body is not an acl-policy document: %v", err)
	}
	if err := p.Validate(); err != nil {
		ae := httpapi.Errorf(http.StatusUnprocessableEntity, "policy %q is invalid: %v", r.PathValue("name"), err)
		if fes, ok := errors.AsType[v4.FieldErrors](err); ok {
			ae.Details = fes
		}
		return ae
	}
	if p.Metadata.Name != r.PathValue("name") {
		return httpapi.Errorf(http.StatusBadRequest, "the policy is named %q, the path %q", p.Metadata.Name, r.PathValue("name")).
			WithDetail("metadata.name", "must be "+r.PathValue("name"))
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	if err := s.store.PutACLPolicy(ctx, &p); err != nil {
		return err
	}
	s.aclCache.forget()
	httpapi.WriteJSON(w, http.StatusOK, p)
	return nil
}

func (s *Server) handleACLPolicyList(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	ps, err := s.store.ACLPolicies(ctx)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"items": ps})
	return nil
}

func (s *Server) handleACLPolicyGet(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	p, err := s.store.ACLPolicy(ctx, r.PathValue("name"))
	if errors.Is(err, store.ErrNotFound) {
		err = httpapi.Errorf(http.StatusNotFound, "policy %s not found", r.PathValue("name"))
	}
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, p)
	return nil
}

func (s *Server) handleACLPolicyDelete(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	err := s.store.DeleteACLPolicy(ctx, r.PathValue("name"))
	if errors.Is(err, store.ErrNotFound) {
		err = httpapi.Errorf(http.StatusNotFound, "policy %s not found", r.PathValue("name"))
	}
	if err != nil {
		return err
	}
	s.aclCache.forget()
	w.WriteHeader(http.StatusNoContent)
	return nil
}
