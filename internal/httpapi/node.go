package httpapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/berthhq/berth/internal/jointoken"
	"github.com/berthhq/berth/internal/pki"
	"github.com/berthhq/berth/internal/store"
)

// Agents authenticate with their node's client certificate (docs/agent.md,
// Authentication), issued by the cluster CA in exchange for a join token. The
// certificate names the node, and a node may read and write only what is its own.

type nodeKey struct{}

// NodeAuth lets a request through only with a node's certificate from the cluster CA
// (verified in the TLS handshake) and puts the node's name in its context (NodeOf).
func NodeAuth(next HandlerFunc) HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		node, ok := pki.NodeOf(PeerCert(r.TLS))
		if !ok {
			return Errorf(http.StatusUnauthorized,
				"agent routes need the node's client certificate from this cluster's CA (an agent gets one with a join token: berth agent --token)")
		}
		return next(w, r.WithContext(context.WithValue(r.Context(), nodeKey{}, node)))
	}
}

// OwnNode is NodeAuth for the routes of one node, /v1/agent/nodes/{name}/...: the
// certificate must name that node.
func OwnNode(next HandlerFunc) HandlerFunc {
	return NodeAuth(func(w http.ResponseWriter, r *http.Request) error {
		if node, name := NodeOf(r), r.PathValue("name"); node != name {
			return Errorf(http.StatusForbidden, "this agent's certificate is for node %s; it cannot act for node %s", node, name)
		}
		return next(w, r)
	})
}

// ServerAuth lets a request through only with a server's client certificate from the
// cluster CA (verified in the TLS handshake).
func ServerAuth(next HandlerFunc) HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if !pki.IsServer(PeerCert(r.TLS)) {
			return Errorf(http.StatusUnauthorized, "this route is for the cluster's servers: it needs a server's client certificate from this cluster's CA")
		}
		return next(w, r)
	}
}

// NodeOf is the node whose agent made the request (set by NodeAuth).
func NodeOf(r *http.Request) string {
	n, _ := r.Context().Value(nodeKey{}).(string)
	return n
}

// PeerCert is the verified client certificate of a request, nil when it gave none.
func PeerCert(cs *tls.ConnectionState) *x509.Certificate {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
		return nil
	}
	return cs.PeerCertificates[0]
}

// JoinTokenOf authenticates the request's bearer join token for role: 401 without a
// token or with one the cluster does not know, 403 for an expired one or one of another
// role.
func JoinTokenOf(ctx context.Context, st *store.Store, r *http.Request, role string) (*store.JoinToken, error) {
	scheme, raw, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, Errorf(http.StatusUnauthorized, "a join token is required (Authorization: Bearer berth-<id>.<secret>; make one with `berth token create`)")
	}
	tok, err := jointoken.Parse(raw)
	if err != nil {
		return nil, Errorf(http.StatusUnauthorized, "%v", err)
	}
	t, err := st.CheckJoinToken(ctx, tok, role, time.Now())
	switch {
	case errors.Is(err, store.ErrUnknownJoinToken):
		return nil, Errorf(http.StatusUnauthorized, "join token berth-%s: %v", tok.ID, err)
	case errors.Is(err, store.ErrJoinTokenRefused):
		return nil, Errorf(http.StatusForbidden, "%v", err)
	case err != nil:
		return nil, err
	}
	return t, nil
}
