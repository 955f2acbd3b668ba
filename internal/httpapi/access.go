package httpapi

import (
	"net/http"

	"github.com/berthhq/berth/internal/acl"
)

// Access is what a route needs before its handler runs. Every route is registered with
// its access in the same call (Mux.Handle), so a route cannot be added without saying
// who may call it; the server's TestEveryRouteHasAccess walks them all.
type Access struct {
	// Guard names how the request is authenticated (the Guard* constants).
	Guard string
	// Perm is the right a user's token must grant (GuardUser only).
	Perm PermFunc
}

// PermFunc says what a user's request needs.
type PermFunc func(r *http.Request) acl.Request

// The ways a route authenticates its caller.
const (
	// GuardOpen needs no identity: probes, the package repository processes download
	// from, the web console's files, and the agent's certificate request, which checks
	// its join token itself.
	GuardOpen = "open"
	// GuardUser needs a user identity (a token, or the anonymous policy) granting Perm.
	GuardUser = "user"
	// GuardAnyUser needs a user identity and no right of its own: whoami and can-i, and
	// an apply, whose documents pass the admission chain, and a plan, which checks the
	// read of each.
	GuardAnyUser = "any-user"
	// GuardNode needs a node's client certificate (NodeAuth).
	GuardNode = "node"
	// GuardOwnNode needs the certificate of the path's node {name} (OwnNode).
	GuardOwnNode = "own-node"
	// GuardServerJoin needs a server join token.
	GuardServerJoin = "server-join"
	// GuardServer needs a server's client certificate from the cluster CA (ServerAuth):
	// calls between the servers of a cluster.
	GuardServer = "server"
	// GuardFrontDoor identifies the caller from the headers and authorizes each /v1
	// call of BCS's and deployd's APIs as its own.
	GuardFrontDoor = "front-door"
)

// The accesses that need no user right.
var (
	Open        = Access{Guard: GuardOpen}
	AnyUser     = Access{Guard: GuardAnyUser}
	NodeCert    = Access{Guard: GuardNode}
	OwnNodeCert = Access{Guard: GuardOwnNode}
	ServerJoin  = Access{Guard: GuardServerJoin}
	ServerCert  = Access{Guard: GuardServer}
	FrontDoor   = Access{Guard: GuardFrontDoor}
)
