package server

import (
	"fmt"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
)

// access is what a route needs before its handler runs. Every route is registered with
// its access in the same call (routeMux.handle), so a route cannot be added without
// saying who may call it; TestEveryRouteHasAccess walks them all.
type access struct {
	// guard names how the request is authenticated (the guard* constants).
	guard string
	// perm is the right a user's token must grant (guardUser only).
	perm permFunc
}

// The ways a route authenticates its caller.
const (
	// guardOpen needs no identity: probes, the package repository processes download
	// from, the web console's files, and the agent's certificate request, which checks
	// its join token itself.
	guardOpen = "open"
	// guardUser needs a user identity (a token, or the anonymous policy) granting perm.
	guardUser = "user"
	// guardAnyUser needs a user identity and no right of its own: whoami and can-i, and
	// an apply, whose documents pass the admission chain (admission.go), and a plan,
	// which checks the read of each (checkReads).
	guardAnyUser = "any-user"
	// guardNode needs a node's client certificate (agent_auth.go).
	guardNode = "node"
	// guardOwnNode needs the certificate of the path's node {name}.
	guardOwnNode = "own-node"
	// guardServerJoin needs a server join token (cluster.go).
	guardServerJoin = "server-join"
	// guardFrontDoor identifies the caller from the headers and authorizes each /v1
	// call of BCS's and deployd's APIs (compat.go) as its own.
	guardFrontDoor = "front-door"
)

var (
	open        = access{guard: guardOpen}
	anyUser     = access{guard: guardAnyUser}
	nodeCert    = access{guard: guardNode}
	ownNodeCert = access{guard: guardOwnNode}
	serverJoin  = access{guard: guardServerJoin}
	frontDoor   = access{guard: guardFrontDoor}
)

// permFunc says what a user's request needs.
type permFunc func(r *http.Request) acl.Request

// inNamespace is verb on the path's {plural} in its {ns} ("*" on /v1/{plural}: every
// namespace).
func inNamespace(verb string) access {
	return access{guard: guardUser, perm: func(r *http.Request) acl.Request {
		ns := r.PathValue("ns")
		if ns == "" {
			ns = "*"
		}
		kind := r.PathValue("plural")
		if k, err := v4.ParseKind(kind); err == nil {
			kind = string(k)
		}
		return acl.Request{Verb: verb, Kind: kind, Namespace: ns}
	}}
}

// on is verb on a fixed kind in the path's {ns}.
func on(verb string, kind string) access {
	return access{guard: guardUser, perm: func(r *http.Request) acl.Request {
		ns := r.PathValue("ns")
		if acl.ClusterKind(kind) {
			ns = ""
		}
		return acl.Request{Verb: verb, Kind: kind, Namespace: ns}
	}}
}

// readEvents: events are read in the namespace of ?namespace=, every namespace without it.
var readEvents = access{guard: guardUser, perm: func(r *http.Request) acl.Request {
	ns := r.URL.Query().Get("namespace")
	if ns == "" {
		ns = "*"
	}
	return acl.Request{Verb: acl.VerbRead, Kind: acl.KindEvent, Namespace: ns}
}}

var (
	task  = string(v4.KindTaskGroup)
	node  = string(v4.KindNode)
	deplo = string(v4.KindDeployment)
)

// adminCluster is what the cluster's administration routes need.
var adminCluster = on(acl.VerbAdmin, acl.KindCluster)

// guard wraps a route's handler with its authentication and authorization (routeMux
// calls it for every route). A route without a valid access is a programming error.
func (s *Server) guard(pattern string, a access, h handlerFunc) handlerFunc {
	switch a.guard {
	case guardOpen:
		return h
	case guardUser:
		if a.perm == nil {
			panic(fmt.Sprintf("server: route %s needs a user right and names none", pattern))
		}
		return s.authorize(a.perm, h)
	case guardAnyUser:
		return s.authorize(nil, h)
	case guardNode:
		return s.nodeAuth(h)
	case guardOwnNode:
		return s.ownNode(h)
	case guardServerJoin:
		return s.joinAuth(h)
	case guardFrontDoor:
		return s.credentialed(h)
	}
	panic(fmt.Sprintf("server: route %s has no access rule", pattern))
}
