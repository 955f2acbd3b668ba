package server

import (
	"fmt"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
)

// inNamespace is verb on the path's {plural} in its {ns} ("*" on /v1/{plural}: every
// namespace).
func inNamespace(verb string) httpapi.Access {
	return httpapi.Access{Guard: httpapi.GuardUser, Perm: func(r *http.Request) acl.Request {
		ns := r.PathValue("ns")
		if ns == "" {
			ns = "*"
		}
		kind := r.PathValue("plural")
		if k, err := v4.ParseKind(kind); err == nil {
			kind = string(k)
		} else if _, custom := customPlural(r); custom {
			kind = acl.KindCustomResource // a definition's resources (customresources.go)
		}
		return acl.Request{Verb: verb, Kind: kind, Namespace: ns}
	}}
}

// on is verb on a fixed kind in the path's {ns}.
func on(verb string, kind string) httpapi.Access {
	return httpapi.Access{Guard: httpapi.GuardUser, Perm: func(r *http.Request) acl.Request {
		ns := r.PathValue("ns")
		if acl.ClusterKind(kind) {
			ns = ""
		}
		return acl.Request{Verb: verb, Kind: kind, Namespace: ns}
	}}
}

// readEvents: events are read in the namespace of ?namespace=, every namespace without it.
var readEvents = httpapi.Access{Guard: httpapi.GuardUser, Perm: func(r *http.Request) acl.Request {
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

// guard wraps a route's handler with its authentication and authorization (the Mux
// calls it for every route). A route without a valid access is a programming error.
func (s *Server) guard(pattern string, a httpapi.Access, h httpapi.HandlerFunc) httpapi.HandlerFunc {
	switch a.Guard {
	case httpapi.GuardOpen:
		return h
	case httpapi.GuardUser:
		if a.Perm == nil {
			panic(fmt.Sprintf("server: route %s needs a user right and names none", pattern))
		}
		return s.authorize(a.Perm, h)
	case httpapi.GuardAnyUser:
		return s.authorize(nil, h)
	case httpapi.GuardNode:
		return httpapi.NodeAuth(h)
	case httpapi.GuardOwnNode:
		return httpapi.OwnNode(h)
	case httpapi.GuardServerJoin:
		return s.joinAuth(h)
	case httpapi.GuardServer:
		return httpapi.ServerAuth(h)
	case httpapi.GuardFrontDoor:
		return s.credentialed(h)
	}
	panic(fmt.Sprintf("server: route %s has no access rule", pattern))
}
