package server

import (
	"context"
	"net/http"

	"github.com/berthhq/berth/internal/acl"
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
	mux.handle("POST /v1/agent/certificate", open, s.handleAgentCertificate)
	mux.handle("POST /v1/agent/certificate/renew", nodeCert, s.handleAgentRenew)
	mux.handle("POST /v1/agent/register", nodeCert, s.handleAgentRegister)
	mux.handle("PUT /v1/agent/nodes/{name}/heartbeat", ownNodeCert, s.handleAgentHeartbeat)
	mux.handle("POST /v1/agent/nodes/{name}/heartbeats", ownNodeCert, s.handleAgentHeartbeats)
	mux.handle("GET /v1/agent/nodes/{name}/taskgroups", ownNodeCert, s.handleAgentTaskGroups)
	mux.handle("POST /v1/agent/nodes/{name}/report", ownNodeCert, s.handleAgentReport)
	mux.handle("POST /v1/agent/nodes/{name}/events", ownNodeCert, s.handleAgentEvent)
	mux.handle("PUT /v1/agent/nodes/{name}/busyports", ownNodeCert, s.handleAgentBusyPorts)
	mux.handle("PUT /v1/agent/taskgroups/{ns}/{name}/status", nodeCert, s.handleAgentStatus)
	mux.handle("GET /v1/agent/configmaps/{ns}/{name}", nodeCert, s.handleAgentConfigMap)
	mux.handle("GET /v1/agent/secrets/{ns}/{name}", nodeCert, s.handleAgentSecret)
	mux.handle("GET /v1/agent/catalog", nodeCert, s.handleAgentCatalog)

	mux.handle("GET /v1/namespaces/{ns}/taskgroups/{name}/logs", on(acl.VerbLogs, task), s.handleTaskGroupLogs)
	mux.handle("POST /v1/namespaces/{ns}/taskgroups/{name}/actions/{action}", on(acl.VerbExec, task), s.handleTaskGroupAction)
	mux.handle("POST /v1/namespaces/{ns}/taskgroups/{name}/exec", on(acl.VerbExec, task), s.handleTaskGroupExec)
	mux.handle("GET /v1/namespaces/{ns}/taskgroups/{name}/exec/ws", on(acl.VerbExec, task), s.handleTaskGroupExecWS)
}

type nodeKey struct{}

// nodeAuth lets a request through only with a node's certificate from the cluster CA
// (verified in the TLS handshake) and puts the node's name in its context.
func (s *Server) nodeAuth(next handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		node, ok := pki.NodeOf(peerCert(r.TLS))
		if !ok {
			return errorf(http.StatusUnauthorized,
				"agent routes need the node's client certificate from this cluster's CA (an agent gets one with a join token: berth agent --token)")
		}
		return next(w, r.WithContext(context.WithValue(r.Context(), nodeKey{}, node)))
	}
}

// ownNode is nodeAuth for the routes of one node, /v1/agent/nodes/{name}/...: the
// certificate must name that node.
func (s *Server) ownNode(next handlerFunc) handlerFunc {
	return s.nodeAuth(func(w http.ResponseWriter, r *http.Request) error {
		if node, name := agentNode(r), r.PathValue("name"); node != name {
			return errorf(http.StatusForbidden, "this agent's certificate is for node %s; it cannot act for node %s", node, name)
		}
		return next(w, r)
	})
}

// agentNode is the node whose agent made the request (set by nodeAuth).
func agentNode(r *http.Request) string {
	n, _ := r.Context().Value(nodeKey{}).(string)
	return n
}
