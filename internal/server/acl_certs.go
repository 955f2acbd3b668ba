package server

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/pki"
	"github.com/berthhq/berth/internal/store"
)

// Users' client certificates (docs/security.md, "Client certificates"): a client that
// cannot send a bearer token, such as Lain's console behind a TLS proxy, shows a
// certificate of the cluster CA bound to a user's token instead. The certificate is only
// a way to show the token: each request looks the token up (cached as tokens are,
// authz.go), so revoking it, its expiry or a change of its policies applies to the
// certificate at once. A node's or a server's certificate is never a user's (pki.UserOf),
// and a user's certificate reaches neither the agents' routes (httpapi.NodeAuth) nor etcd.

// maxUserCertTTL bounds the lifetime asked for a user's certificate, as a token's.
const maxUserCertTTL = maxJoinTokenTTL

// identifyCertificate is the identity of the token a verified user's certificate names,
// when the token still exists, is the one the certificate was issued for (its binding),
// has not expired and is no management token.
func (s *Server) identifyCertificate(ctx context.Context, name, binding string) (*acl.Identity, error) {
	id := strings.TrimPrefix(name, "berth-acl-")
	if acl.ValidID(id) != nil || !strings.HasPrefix(name, "berth-acl-") {
		return nil, httpapi.Errorf(http.StatusUnauthorized, "401: the client certificate names no token (%q)", name)
	}
	t, err := s.aclCache.token(ctx, s.store, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && t.CertBinding() != binding) {
		return nil, httpapi.Errorf(http.StatusUnauthorized, "401: the client certificate's token berth-acl-%s is unknown or revoked; "+
			"make a new certificate with `berth acl token create --client-cert`", id)
	}
	if err != nil {
		return nil, err
	}
	if t.Expired(time.Now()) {
		return nil, httpapi.Errorf(http.StatusUnauthorized, "401: the client certificate's token berth-acl-%s expired at %s", t.ID, t.Expires.Format(time.RFC3339))
	}
	if t.Management {
		// Never issued (handleACLCertificate): a file next to a proxy is no place for
		// every right of the cluster.
		return nil, httpapi.Errorf(http.StatusUnauthorized, "401: a client certificate cannot stand for the management token berth-acl-%s", t.ID)
	}
	ident, err := s.identityOf(ctx, t)
	if err != nil {
		return nil, err
	}
	ident.Certificate = true
	return ident, nil
}

// handleACLCertificate issues a client certificate bound to a token, for the key of the
// request's CSR: CommonName the token's id, Organization berth:users, the token's
// binding, valid for the asked TTL (default --cert-lifetime) and never past the token's
// expiry. Only a token with policies may be bound.
func (s *Server) handleACLCertificate(w http.ResponseWriter, r *http.Request) error {
	var req v4.ACLCertificateRequest
	if err := s.bodyReader.Decode(w, r, &req); err != nil {
		return err
	}
	now := time.Now().UTC()
	life := s.certLifetime
	if life <= 0 {
		life = pki.CertLifetime
	}
	if req.TTL != "" {
		d, err := time.ParseDuration(req.TTL)
		if err != nil || d <= 0 || d > maxUserCertTTL {
			return httpapi.Errorf(http.StatusUnprocessableEntity, "ttl: want a duration such as 720h, up to 10 years, got %q", req.TTL).
				WithDetail("ttl", "want a duration such as 720h, up to 10 years")
		}
		life = d
	}
	csr, err := pki.ParseCSR([]byte(req.CSR))
	if err != nil {
		return httpapi.Errorf(http.StatusUnprocessableEntity, "csr: %v", err).WithDetail("csr", err.Error())
	}
	id := strings.TrimPrefix(r.PathValue("id"), "berth-acl-")
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	var t *acl.Token
	err = store.ErrNotFound
	if acl.ValidID(id) == nil {
		t, err = s.store.ACLToken(ctx, id)
	}
	if errors.Is(err, store.ErrNotFound) {
		return httpapi.Errorf(http.StatusNotFound, "token berth-acl-%s not found", id)
	}
	if err != nil {
		return err
	}
	if t.Management {
		return httpapi.Errorf(http.StatusUnprocessableEntity, "token berth-acl-%s is a management token: a certificate stands only for a token with policies "+
			"(berth acl token create --policy P --client-cert FILE)", id).WithDetail("id", "a management token cannot have a certificate")
	}
	if t.Expired(now) {
		return httpapi.Errorf(http.StatusUnprocessableEntity, "token berth-acl-%s expired at %s", id, t.Expires.Format(time.RFC3339)).
			WithDetail("id", "expired")
	}
	der, err := s.ca.Sign(pki.Request{CommonName: "berth-acl-" + t.ID, Organization: pki.OrgUsers, Unit: t.CertBinding(), Client: true,
		Lifetime: life, NotAfter: t.Expires}, csr.PublicKey, now)
	if err != nil {
		return err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusCreated, v4.ACLCertificate{Token: "berth-acl-" + t.ID,
		Certificate: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), CA: string(s.ca.CertPEM), Expires: cert.NotAfter})
	return nil
}
