package server

import (
	"context"
	"net/http"

	"github.com/berthhq/berth/internal/pki"
)

// Agents authenticate with their node's client certificate (docs/agent.md,
// Authentication), issued by the cluster CA in exchange for a join token
// (agent_certs.go). The certificate names the node, and a node may read and write only
// what is its own: its node, the task groups bound to it, and the configmaps and secrets
// those use; and it reads every service and endpoints object (its DNS server and service
// proxy serve them all). The join token itself is good for nothing but getting a certificate.

// agentRoutes registers the routes agents call, each behind the certificate check, and the
// users' logs, actions and exec routes the server proxies to agents.
func (s *Server) agentRoutes(mux *routeMux) {
	mux.HandleFunc("POST /v1/agent/certificate", s.handleAgentCertificate)
	mux.HandleFunc("POST /v1/agent/certificate/renew", s.nodeAuth(s.handleAgentRenew))
	mux.HandleFunc("POST /v1/agent/register", s.nodeAuth(s.handleAgentRegister))
	mux.HandleFunc("PUT /v1/agent/nodes/{name}/heartbeat", s.ownNode(s.handleAgentHeartbeat))
	mux.HandleFunc("POST /v1/agent/nodes/{name}/heartbeats", s.ownNode(s.handleAgentHeartbeats))
	mux.HandleFunc("GET /v1/agent/nodes/{name}/taskgroups", s.ownNode(s.handleAgentTaskGroups))
	mux.HandleFunc("POST /v1/agent/nodes/{name}/report", s.ownNode(s.handleAgentReport))
	mux.HandleFunc("POST /v1/agent/nodes/{name}/events", s.ownNode(s.handleAgentEvent))
	mux.HandleFunc("PUT /v1/agent/nodes/{name}/busyports", s.ownNode(s.handleAgentBusyPorts))
	mux.HandleFunc("PUT /v1/agent/taskgroups/{ns}/{name}/status", s.nodeAuth(s.handleAgentStatus))
	mux.HandleFunc("GET /v1/agent/configmaps/{ns}/{name}", s.nodeAuth(s.handleAgentConfigMap))
	mux.HandleFunc("GET /v1/agent/secrets/{ns}/{name}", s.nodeAuth(s.handleAgentSecret))
	mux.HandleFunc("GET /v1/agent/catalog", s.nodeAuth(s.handleAgentCatalog))

	mux.HandleFunc("GET /v1/namespaces/{ns}/taskgroups/{name}/logs", s.handleTaskGroupLogs)
	mux.HandleFunc("POST /v1/namespaces/{ns}/taskgroups/{name}/actions/{action}", s.handleTaskGroupAction)
	mux.HandleFunc("POST /v1/namespaces/{ns}/taskgroups/{name}/exec", s.handleTaskGroupExec)
	mux.HandleFunc("GET /v1/namespaces/{ns}/taskgroups/{name}/exec/ws", s.handleTaskGroupExecWS)
}

type nodeKey struct{}

// nodeAuth lets a request through only with a node's certificate from the cluster CA
// (verified in the TLS handshake) and puts the node's name in its context.
func (s *Server) nodeAuth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		node, ok := pki.NodeOf(peerCert(r.TLS))
		if !ok {
			s.writeError(w, r, errorf(http.StatusUnauthorized,
				"agent routes need the node's client certificate from this cluster's CA (an agent gets one with a join token: berth agent --token)"))
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), nodeKey{}, node)))
	}
}

// ownNode is nodeAuth for the routes of one node, /v1/agent/nodes/{name}/...: the
// certificate must name that node.
func (s *Server) ownNode(next http.HandlerFunc) http.HandlerFunc {
	return s.nodeAuth(func(w http.ResponseWriter, r *http.Request) {
		if node, name := agentNode(r), r.PathValue("name"); node != name {
			s.writeError(w, r, errorf(http.StatusForbidden, "this agent's certificate is for node %s; it cannot act for node %s", node, name))
			return
		}
		next(w, r)
	})
}

// agentNode is the node whose agent made the request (set by nodeAuth).
func agentNode(r *http.Request) string {
	n, _ := r.Context().Value(nodeKey{}).(string)
	return n
}
