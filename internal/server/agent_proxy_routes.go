package server

import (
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
)

// agentProxyRoutes registers the users' logs, usage, actions and exec routes the server proxies
// to agents (agent_proxy.go); the routes agents call are internal/agentapi's.
func (s *Server) agentProxyRoutes(mux *httpapi.Mux) {
	mux.Handle("GET /v1/namespaces/{ns}/taskgroups/{name}/logs", on(acl.VerbLogs, task), s.handleTaskGroupLogs)
	mux.Handle("GET /v1/namespaces/{ns}/taskgroups/{name}/usage", on(acl.VerbRead, task), s.handleTaskGroupUsage)
	mux.Handle("POST /v1/namespaces/{ns}/taskgroups/{name}/actions/{action}", on(acl.VerbExec, task), s.handleTaskGroupAction)
	mux.Handle("POST /v1/namespaces/{ns}/taskgroups/{name}/exec", on(acl.VerbExec, task), s.handleTaskGroupExec)
	mux.Handle("GET /v1/namespaces/{ns}/taskgroups/{name}/exec/ws", on(acl.VerbExec, task), s.handleTaskGroupExecWS)
}
