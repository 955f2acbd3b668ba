package server

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// Agents authenticate with the cluster's join token as a bearer token (docs/agent.md,
// Authentication). Until agents get certificates (DESIGN §7) the token is the only
// credential of the agent protocol, so it is compared in constant time and never logged.

// agentRoutes registers the routes agents call, each behind the token check, and the
// users' logs, actions and exec routes the server proxies to agents.
func (s *Server) agentRoutes(mux *routeMux) {
	mux.HandleFunc("POST /v1/agent/register", s.agentAuth(s.handleAgentRegister))
	mux.HandleFunc("PUT /v1/agent/nodes/{name}/heartbeat", s.agentAuth(s.handleAgentHeartbeat))
	mux.HandleFunc("GET /v1/agent/nodes/{name}/taskgroups", s.agentAuth(s.handleAgentTaskGroups))
	mux.HandleFunc("POST /v1/agent/nodes/{name}/report", s.agentAuth(s.handleAgentReport))
	mux.HandleFunc("PUT /v1/agent/taskgroups/{ns}/{name}/status", s.agentAuth(s.handleAgentStatus))
	mux.HandleFunc("GET /v1/agent/configmaps/{ns}/{name}", s.agentAuth(s.handleAgentConfigMap))
	mux.HandleFunc("GET /v1/agent/secrets/{ns}/{name}", s.agentAuth(s.handleAgentSecret))

	mux.HandleFunc("GET /v1/namespaces/{ns}/taskgroups/{name}/logs", s.handleTaskGroupLogs)
	mux.HandleFunc("POST /v1/namespaces/{ns}/taskgroups/{name}/actions/{action}", s.handleTaskGroupAction)
	mux.HandleFunc("POST /v1/namespaces/{ns}/taskgroups/{name}/exec", s.handleTaskGroupExec)
}

// agentAuth lets a request through only with the join token. A server started without
// one has no agents: the routes answer 403 with what to do.
func (s *Server) agentAuth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.joinToken == "" {
			s.writeError(w, r, errorf(http.StatusForbidden, "agent routes are disabled: start the server with --join-token"))
			return
		}
		if !tokenMatches(r, s.joinToken) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="berth-agent"`)
			s.writeError(w, r, errorf(http.StatusUnauthorized, "a valid join token is required (Authorization: Bearer <token>)"))
			return
		}
		next(w, r)
	}
}

// tokenMatches reports whether r carries "Authorization: Bearer <token>", comparing in
// constant time. An empty token never matches.
func tokenMatches(r *http.Request, token string) bool {
	if token == "" {
		return false
	}
	h := r.Header.Get("Authorization")
	scheme, got, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1
}
