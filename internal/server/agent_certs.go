package server

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"net/http"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/jointoken"
	"github.com/berthhq/berth/internal/pki"
	"github.com/berthhq/berth/internal/store"
)

// Node certificates (docs/security.md, Node identity): an agent joins by sending a join
// token and a certificate signing request for its node; the server answers a client and
// serving certificate naming that node, signed by the cluster CA. The agent renews it
// with the certificate itself before it expires, and cannot change its name doing so.

// handleAgentCertificate exchanges a join token for a node certificate. The node's name
// is claimed for the key of the request: a name another key holds (an existing node) is
// refused, unless the token is bound to that name by an administrator.
func (s *Server) handleAgentCertificate(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := requestContext(r)
	defer cancel()
	tok, err := s.joinTokenOf(ctx, r, v4.JoinRoleAgent)
	if err != nil {
		return err
	}
	var req v4.AgentCertificateRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	if err := v4.CheckNodeName(req.NodeName); err != nil {
		return errorf(http.StatusBadRequest, "%v", err).withDetail("nodeName", err.Error())
	}
	if tok.Node != "" && tok.Node != req.NodeName {
		return errorf(http.StatusForbidden, "nodeName: join token berth-%s joins node %s only, not %q", tok.ID, tok.Node, req.NodeName).
			withDetail("nodeName", "must be "+tok.Node)
	}
	csr, keyHash, err := parseNodeCSR(req.CSR)
	if err != nil {
		return err
	}
	err = s.store.ClaimNodeName(ctx, req.NodeName, keyHash, tok.Node == req.NodeName)
	if errors.Is(err, store.ErrNodeNameTaken) {
		return errorf(http.StatusConflict, "nodeName: node %s exists and joined with another key; "+
			"to join it again, delete it (berth delete node %s) or use a token bound to it (berth token create --node %s)", req.NodeName, req.NodeName, req.NodeName).
			withDetail("nodeName", "taken by another key")
	}
	if err != nil {
		return err
	}
	return s.issueNodeCertificate(ctx, w, r, req.NodeName, csr, "NodeJoined", "joined with a join token")
}

// handleAgentRenew issues a new certificate to the node whose certificate authenticated
// the request, and records its key as the name's.
func (s *Server) handleAgentRenew(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := requestContext(r)
	defer cancel()
	var req v4.AgentCertificateRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	node := agentNode(r)
	if req.NodeName != "" && req.NodeName != node {
		return errorf(http.StatusForbidden, "nodeName: this agent's certificate is for node %s; a renewal cannot rename it to %q", node, req.NodeName).
			withDetail("nodeName", "must be "+node)
	}
	csr, keyHash, err := parseNodeCSR(req.CSR)
	if err != nil {
		return err
	}
	if err := s.store.SetNodeKey(ctx, node, keyHash); err != nil {
		return err
	}
	return s.issueNodeCertificate(ctx, w, r, node, csr, "", "")
}

// parseNodeCSR reads a node's certificate request and the SHA-256 of its public key.
func parseNodeCSR(csrPEM string) (*x509.CertificateRequest, string, error) {
	csr, err := pki.ParseCSR([]byte(csrPEM))
	if err != nil {
		return nil, "", errorf(http.StatusBadRequest, "csr: %v", err).withDetail("csr", err.Error())
	}
	spki, err := x509.MarshalPKIXPublicKey(csr.PublicKey)
	if err != nil {
		return nil, "", errorf(http.StatusBadRequest, "csr: %v", err).withDetail("csr", err.Error())
	}
	sum := sha256.Sum256(spki)
	return csr, hex.EncodeToString(sum[:]), nil
}

func (s *Server) issueNodeCertificate(ctx context.Context, w http.ResponseWriter, r *http.Request, node string, csr *x509.CertificateRequest, reason, verb string) error {
	der, err := s.ca.Sign(pki.Request{CommonName: node, Organization: pki.OrgNodes, Client: true, Server: true,
		Lifetime: s.certLifetime}, csr.PublicKey, time.Now())
	if err != nil {
		return err
	}
	if reason != "" {
		s.recordNode(ctx, node, reason, verb)
	}
	writeJSON(w, http.StatusOK, v4.AgentCertificate{Certificate: string(pemCert(der)), CA: string(s.ca.CertPEM)})
	return nil
}

// recordNode records an event on a node, which may not be registered yet.
func (s *Server) recordNode(ctx context.Context, node, reason, verb string) {
	n := &v4.Node{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindNode}, Metadata: v4.ObjectMeta{Name: node}}
	s.record(n, reason, verb)
}

// joinTokenOf authenticates the request's bearer join token for role: 401 without a token
// or with one the cluster does not know, 403 for an expired one or one of another role.
func (s *Server) joinTokenOf(ctx context.Context, r *http.Request, role string) (*store.JoinToken, error) {
	scheme, raw, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, errorf(http.StatusUnauthorized, "a join token is required (Authorization: Bearer berth-<id>.<secret>; make one with `berth token create`)")
	}
	tok, err := jointoken.Parse(raw)
	if err != nil {
		return nil, errorf(http.StatusUnauthorized, "%v", err)
	}
	t, err := s.store.CheckJoinToken(ctx, tok, role, time.Now())
	switch {
	case errors.Is(err, store.ErrUnknownJoinToken):
		return nil, errorf(http.StatusUnauthorized, "join token berth-%s: %v", tok.ID, err)
	case errors.Is(err, store.ErrJoinTokenRefused):
		return nil, errorf(http.StatusForbidden, "%v", err)
	case err != nil:
		return nil, err
	}
	return t, nil
}

// decodeBody reads a JSON body strictly into v: 400 naming what is wrong.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	if err := decodeStrict(body, v); err != nil {
		return errorf(http.StatusBadRequest, "the body is not valid: %v", err)
	}
	return nil
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
