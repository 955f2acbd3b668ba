package agentapi

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"net/http"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
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
func (a *API) handleAgentCertificate(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	tok, err := httpapi.JoinTokenOf(ctx, a.store, r, v4.JoinRoleAgent)
	if err != nil {
		return err
	}
	var req v4.AgentCertificateRequest
	if err := a.bodies.Decode(w, r, &req); err != nil {
		return err
	}
	if err := v4.CheckNodeName(req.NodeName); err != nil {
		return httpapi.Errorf(http.StatusBadRequest, "%v", err).WithDetail("nodeName", err.Error())
	}
	if tok.Node != "" && tok.Node != req.NodeName {
		return httpapi.Errorf(http.StatusForbidden, "nodeName: join token berth-%s joins node %s only, not %q", tok.ID, tok.Node, req.NodeName).
			WithDetail("nodeName", "must be "+tok.Node)
	}
	csr, keyHash, err := parseNodeCSR(req.CSR)
	if err != nil {
		return err
	}
	err = a.store.ClaimNodeName(ctx, req.NodeName, keyHash, tok.Node == req.NodeName)
	if errors.Is(err, store.ErrNodeNameTaken) {
		return httpapi.Errorf(http.StatusConflict, "nodeName: node %s exists and joined with another key; "+
			"to join it again, delete it (berth delete node %s) or use a token bound to it (berth token create --node %s)", req.NodeName, req.NodeName, req.NodeName).
			WithDetail("nodeName", "taken by another key")
	}
	if err != nil {
		return err
	}
	return a.issueNodeCertificate(ctx, w, r, req.NodeName, csr, "NodeJoined", "joined with a join token")
}

// handleAgentRenew issues a new certificate to the node whose certificate authenticated
// the request, and records its key as the name'a.
func (a *API) handleAgentRenew(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	var req v4.AgentCertificateRequest
	if err := a.bodies.Decode(w, r, &req); err != nil {
		return err
	}
	node := httpapi.NodeOf(r)
	if req.NodeName != "" && req.NodeName != node {
		return httpapi.Errorf(http.StatusForbidden, "nodeName: this agent's certificate is for node %s; a renewal cannot rename it to %q", node, req.NodeName).
			WithDetail("nodeName", "must be "+node)
	}
	csr, keyHash, err := parseNodeCSR(req.CSR)
	if err != nil {
		return err
	}
	if err := a.store.SetNodeKey(ctx, node, keyHash); err != nil {
		return err
	}
	return a.issueNodeCertificate(ctx, w, r, node, csr, "", "")
}

// parseNodeCSR reads a node's certificate request and the SHA-256 of its public key.
func parseNodeCSR(csrPEM string) (*x509.CertificateRequest, string, error) {
	csr, err := pki.ParseCSR([]byte(csrPEM))
	if err != nil {
		return nil, "", httpapi.Errorf(http.StatusBadRequest, "csr: %v", err).WithDetail("csr", err.Error())
	}
	spki, err := x509.MarshalPKIXPublicKey(csr.PublicKey)
	if err != nil {
		return nil, "", httpapi.Errorf(http.StatusBadRequest, "csr: %v", err).WithDetail("csr", err.Error())
	}
	sum := sha256.Sum256(spki)
	return csr, hex.EncodeToString(sum[:]), nil
}

func (a *API) issueNodeCertificate(ctx context.Context, w http.ResponseWriter, r *http.Request, node string, csr *x509.CertificateRequest, reason, verb string) error {
	der, err := a.ca.Sign(pki.Request{CommonName: node, Organization: pki.OrgNodes, Client: true, Server: true,
		Lifetime: a.certLifetime}, csr.PublicKey, time.Now())
	if err != nil {
		return err
	}
	if reason != "" {
		a.recordNode(ctx, node, reason, verb)
	}
	httpapi.WriteJSON(w, http.StatusOK, v4.AgentCertificate{Certificate: string(pemCert(der)), CA: string(a.ca.CertPEM)})
	return nil
}

// recordNode records an event on a node, which may not be registered yet.
func (a *API) recordNode(ctx context.Context, node, reason, verb string) {
	n := &v4.Node{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindNode}, Metadata: v4.ObjectMeta{Name: node}}
	httpapi.Record(a.store, n, reason, verb)
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
