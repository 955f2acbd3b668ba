package server

import (
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/compat/bcs"
	"github.com/berthhq/berth/internal/compat/deployd"
)

// permFunc says what a request needs. A route whose permFunc is nil takes any identity:
// whoami and can-i need no right, and an apply or a plan checks each of its documents
// itself (checkDocuments).
type permFunc func(r *http.Request) acl.Request

// openRoutes need no identity: probes, the package repository processes download from,
// and the routes of agents and joining servers, which authenticate otherwise.
var openRoutes = map[string]bool{
	"GET /healthz": true, "GET /readyz": true, "GET /packages/": true, "/": true,
	// The web console's files (its data comes from the API, with the user's token).
	"GET /ui/": true, "GET /ui": true, "GET /{$}": true,
	"POST /v1/agent/certificate": true, "POST /v1/agent/certificate/renew": true, "POST /v1/agent/register": true,
	"PUT /v1/agent/nodes/{name}/heartbeat": true, "POST /v1/agent/nodes/{name}/heartbeats": true,
	"GET /v1/agent/nodes/{name}/taskgroups": true,
	"POST /v1/agent/nodes/{name}/report":    true, "PUT /v1/agent/taskgroups/{ns}/{name}/status": true,
	"POST /v1/agent/nodes/{name}/events": true, "PUT /v1/agent/nodes/{name}/busyports": true,
	"GET /v1/agent/configmaps/{ns}/{name}": true, "GET /v1/agent/secrets/{ns}/{name}": true,
	"GET /v1/agent/catalog":    true,
	"POST /v1/cluster/members": true,
	// BCS's and deployd's APIs (compat.go) are authorized call by call: each of their
	// /v1 calls is.
	bcs.DriverPrefix + "/": true, bcs.GatewayPrefix + "/": true, deployd.Prefix: true,
}

// inNamespace is verb on the path's {plural} in its {ns} ("*" on /v1/{plural}: every
// namespace).
func inNamespace(verb string) permFunc {
	return func(r *http.Request) acl.Request {
		ns := r.PathValue("ns")
		if ns == "" {
			ns = "*"
		}
		kind := r.PathValue("plural")
		if k, err := v4.ParseKind(kind); err == nil {
			kind = string(k)
		}
		return acl.Request{Verb: verb, Kind: kind, Namespace: ns}
	}
}

// on is verb on a fixed kind in the path's {ns}.
func on(verb string, kind string) permFunc {
	return func(r *http.Request) acl.Request {
		ns := r.PathValue("ns")
		if acl.ClusterKind(kind) {
			ns = ""
		}
		return acl.Request{Verb: verb, Kind: kind, Namespace: ns}
	}
}

// events are read in the namespace of ?namespace=, every namespace without it.
func events(r *http.Request) acl.Request {
	ns := r.URL.Query().Get("namespace")
	if ns == "" {
		ns = "*"
	}
	return acl.Request{Verb: acl.VerbRead, Kind: acl.KindEvent, Namespace: ns}
}

var (
	task  = string(v4.KindTaskGroup)
	node  = string(v4.KindNode)
	deplo = string(v4.KindDeployment)
)

// routePerms maps every user route to what it needs.
var routePerms = map[string]permFunc{
	"GET /v1/namespaces/{ns}/{plural}":                             inNamespace(acl.VerbRead),
	"POST /v1/namespaces/{ns}/{plural}":                            inNamespace(acl.VerbWrite),
	"GET /v1/namespaces/{ns}/{plural}/{name}":                      inNamespace(acl.VerbRead),
	"PUT /v1/namespaces/{ns}/{plural}/{name}":                      inNamespace(acl.VerbWrite),
	"DELETE /v1/namespaces/{ns}/{plural}/{name}":                   inNamespace(acl.VerbWrite),
	"GET /v1/namespaces/{ns}/{plural}/{name}/definition":           inNamespace(acl.VerbRead),
	"POST /v1/namespaces/{ns}/{plural}/{name}/scale":               inNamespace(acl.VerbScale),
	"POST /v1/namespaces/{ns}/deployments/{name}/rollout/{action}": on(acl.VerbWrite, deplo),
	"GET /v1/namespaces/{ns}/deployments/{name}/history":           on(acl.VerbRead, deplo),
	"GET /v1/{plural}":                                             inNamespace(acl.VerbRead),
	"GET /v1/nodes":                                                on(acl.VerbRead, node),
	"POST /v1/nodes":                                               on(acl.VerbWrite, node),
	"GET /v1/nodes/{name}":                                         on(acl.VerbRead, node),
	"GET /v1/nodes/{name}/metrics":                                 on(acl.VerbRead, node),
	"PUT /v1/nodes/{name}":                                         on(acl.VerbWrite, node),
	"PATCH /v1/nodes/{name}":                                       on(acl.VerbWrite, node),
	"DELETE /v1/nodes/{name}":                                      on(acl.VerbWrite, node),
	"POST /v1/nodes/{name}/drain":                                  on(acl.VerbWrite, node),
	"POST /v1/namespaces/{ns}/taskgroups/{name}/move":              on(acl.VerbWrite, task),
	"GET /v1/engine":                                               on(acl.VerbRead, acl.KindEngine),
	"PUT /v1/engine":                                               on(acl.VerbAdmin, acl.KindEngine),
	"POST /v1/apply":                                               nil,
	"POST /v1/plan":                                                nil,
	"GET /v1/events":                                               events,
	"GET /v1/namespaces/{ns}/taskgroups/{name}/logs":               on(acl.VerbLogs, task),
	"POST /v1/namespaces/{ns}/taskgroups/{name}/actions/{action}":  on(acl.VerbExec, task),
	"POST /v1/namespaces/{ns}/taskgroups/{name}/exec":              on(acl.VerbExec, task),
	"GET /v1/namespaces/{ns}/taskgroups/{name}/exec/ws":            on(acl.VerbExec, task),
	"GET /v1/cluster":                                              on(acl.VerbRead, acl.KindCluster),
	"POST /v1/cluster/recover":                                     on(acl.VerbAdmin, acl.KindCluster),
	"POST /v1/encryption/rewrap":                                   on(acl.VerbAdmin, acl.KindCluster),
	"POST /v1/jointokens":                                          on(acl.VerbAdmin, acl.KindCluster),
	"GET /v1/jointokens":                                           on(acl.VerbAdmin, acl.KindCluster),
	"DELETE /v1/jointokens/{id}":                                   on(acl.VerbAdmin, acl.KindCluster),
	"GET /metrics":                                                 on(acl.VerbRead, acl.KindMetrics),
	"GET /metrics/etcd":                                            on(acl.VerbRead, acl.KindMetrics),
	"GET /v1/acl/whoami":                                           nil,
	"POST /v1/acl/can-i":                                           nil,
	"POST /v1/acl/tokens":                                          on(acl.VerbAdmin, acl.KindCluster),
	"GET /v1/acl/tokens":                                           on(acl.VerbAdmin, acl.KindCluster),
	"DELETE /v1/acl/tokens/{id}":                                   on(acl.VerbAdmin, acl.KindCluster),
	"PUT /v1/acl/policies/{name}":                                  on(acl.VerbAdmin, acl.KindCluster),
	"GET /v1/acl/policies":                                         on(acl.VerbAdmin, acl.KindCluster),
	"GET /v1/acl/policies/{name}":                                  on(acl.VerbAdmin, acl.KindCluster),
	"DELETE /v1/acl/policies/{name}":                               on(acl.VerbAdmin, acl.KindCluster),
	"GET /v1/debug/pprof/{profile...}":                             on(acl.VerbAdmin, acl.KindCluster),
	"GET /v1/namespaces/{ns}/quota":                                on(acl.VerbRead, kindNamespaceQuota),
	"PUT /v1/namespaces/{ns}/quota":                                on(acl.VerbAdmin, acl.KindCluster),
	"DELETE /v1/namespaces/{ns}/quota":                             on(acl.VerbAdmin, acl.KindCluster),
}

// guard wraps a route's handler with its authorization (routeMux calls it for every
// route). A route in neither table is refused: a new route must say what it needs.
func (s *Server) guard(pattern string, h http.HandlerFunc) http.HandlerFunc {
	if openRoutes[pattern] {
		return h
	}
	perm, ok := routePerms[pattern]
	if !ok {
		return func(w http.ResponseWriter, r *http.Request) {
			s.writeError(w, r, errorf(http.StatusForbidden, "route %s has no authorization rule", pattern))
		}
	}
	return s.authorize(perm, h)
}
