package server

import (
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
)

// Agents authenticate with their node's client certificate (docs/agent.md,
// Authentication), issued by the cluster CA in exchange for a join token
// (agent_certs.go). The certificate names the node, and a node may read and write only
// what is its own: its node, the task groups bound to it, and the configmaps and secrets
// those use; and it reads every service and endpoints object (its DNS server and service
// proxy serve them all). The join token itself is good for nothing but getting a certificate.

// agentRoutes registers the routes agents call, each behind the certificate check, and the
// users' logs, actions and exec routes the server proxies to agents.
func (s *Server) agentRoutes(mux *httpapi.Mux) {
	mux.Handle("POST /v1/agent/certificate", open, s.handleAgentCertificate)
	mux.Handle("POST /v1/agent/certificate/renew", nodeCert, s.handleAgentRenew)
	mux.Handle("POST /v1/agent/register", nodeCert, s.handleAgentRegister)
	mux.Handle("PUT /v1/agent/nodes/{name}/heartbeat", ownNodeCert, s.handleAgentHeartbeat)
	mux.Handle("POST /v1/agent/nodes/{name}/heartbeats", ownNodeCert, s.handleAgentHeartbeats)
	mux.Handle("GET /v1/agent/nodes/{name}/taskgroups", ownNodeCert, s.handleAgentTaskGroups)
	mux.Handle("POST /v1/agent/nodes/{name}/report", ownNodeCert, s.handleAgentReport)
	mux.Handle("POST /v1/agent/nodes/{name}/events", ownNodeCert, s.handleAgentEvent)
	mux.Handle("PUT /v1/agent/nodes/{name}/busyports", ownNodeCert, s.handleAgentBusyPorts)
	mux.Handle("PUT /v1/agent/taskgroups/{ns}/{name}/status", nodeCert, s.handleAgentStatus)
	mux.Handle("GET /v1/agent/configmaps/{ns}/{name}", nodeCert, s.handleAgentConfigMap)
	mux.Handle("GET /v1/agent/secrets/{ns}/{name}", nodeCert, s.handleAgentSecret)
	mux.Handle("GET /v1/agent/catalog", nodeCert, s.handleAgentCatalog)

	mux.Handle("GET /v1/namespaces/{ns}/taskgroups/{name}/logs", on(acl.VerbLogs, task), s.handleTaskGroupLogs)
	mux.Handle("POST /v1/namespaces/{ns}/taskgroups/{name}/actions/{action}", on(acl.VerbExec, task), s.handleTaskGroupAction)
	mux.Handle("POST /v1/namespaces/{ns}/taskgroups/{name}/exec", on(acl.VerbExec, task), s.handleTaskGroupExec)
	mux.Handle("GET /v1/namespaces/{ns}/taskgroups/{name}/exec/ws", on(acl.VerbExec, task), s.handleTaskGroupExecWS)
}
