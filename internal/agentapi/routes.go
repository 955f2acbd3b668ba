package agentapi

import "github.com/berthhq/berth/internal/httpapi"

// Agents authenticate with their node's client certificate (docs/agent.md,
// Authentication), issued by the cluster CA in exchange for a join token (certs.go). The
// certificate names the node, and a node may read and write only what is its own: its
// node, the task groups bound to it, and the configmaps and secrets those use; and it
// reads every service and endpoints object (its DNS server and service proxy serve them
// all). The join token itself is good for nothing but getting a certificate.

// Routes registers the routes agents call on mux, each behind the certificate check
// (httpapi.NodeCert, httpapi.OwnNodeCert) but the certificate request, which checks its
// join token itself.
func (a *API) Routes(mux *httpapi.Mux) {
	mux.Handle("POST /v1/agent/certificate", httpapi.Open, a.handleAgentCertificate)
	mux.Handle("POST /v1/agent/certificate/renew", httpapi.NodeCert, a.handleAgentRenew)
	mux.Handle("POST /v1/agent/register", httpapi.NodeCert, a.handleAgentRegister)
	mux.Handle("PUT /v1/agent/nodes/{name}/heartbeat", httpapi.OwnNodeCert, a.handleAgentHeartbeat)
	mux.Handle("POST /v1/agent/nodes/{name}/heartbeats", httpapi.OwnNodeCert, a.handleAgentHeartbeats)
	mux.Handle("GET /v1/agent/nodes/{name}/taskgroups", httpapi.OwnNodeCert, a.handleAgentTaskGroups)
	mux.Handle("POST /v1/agent/nodes/{name}/report", httpapi.OwnNodeCert, a.handleAgentReport)
	mux.Handle("POST /v1/agent/nodes/{name}/statuses", httpapi.OwnNodeCert, a.handleAgentStatuses)
	mux.Handle("POST /v1/agent/nodes/{name}/events", httpapi.OwnNodeCert, a.handleAgentEvent)
	mux.Handle("PUT /v1/agent/nodes/{name}/busyports", httpapi.OwnNodeCert, a.handleAgentBusyPorts)
	mux.Handle("PUT /v1/agent/nodes/{name}/csiplugins", httpapi.OwnNodeCert, a.handleAgentCSIPlugins)
	mux.Handle("PUT /v1/agent/nodes/{name}/revocable", httpapi.OwnNodeCert, a.handleAgentRevocable)
	mux.Handle("PUT /v1/agent/taskgroups/{ns}/{name}/status", httpapi.NodeCert, a.handleAgentStatus)
	mux.Handle("GET /v1/agent/configmaps/{ns}/{name}", httpapi.NodeCert, a.handleAgentConfigMap)
	mux.Handle("GET /v1/agent/secrets/{ns}/{name}", httpapi.NodeCert, a.handleAgentSecret)
	mux.Handle("GET /v1/agent/catalog", httpapi.NodeCert, a.handleAgentCatalog)
	mux.Handle("POST /v1/agent/volumes/claim", httpapi.NodeCert, a.handleAgentVolumeClaim)
	mux.Handle("POST /v1/agent/volumes/release", httpapi.NodeCert, a.handleAgentVolumeRelease)
}
