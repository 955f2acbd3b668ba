package v4

import "time"

// Roles of a join token: an agent token joins nodes; a server token also joins servers
// (which receive the cluster's CA and encryption keys), so it is the more powerful.
const (
	JoinRoleAgent  = "agent"
	JoinRoleServer = "server"
)

// JoinTokenRequest is the body of POST /v1/jointokens (docs/security.md, Join tokens).
type JoinTokenRequest struct {
	// Role is "agent" (default: joins nodes) or "server" (also joins servers).
	Role string `json:"role,omitempty"`
	// TTL is how long the token works, a Go duration ("24h"); "0" never expires; ""
	// is 24 hours for an agent token (as kubeadm's), never for a server token.
	TTL         string `json:"ttl,omitempty"`
	Description string `json:"description,omitempty"`
	// Node binds an agent token to one node name: it joins only that node, and may join
	// it again under a new key (an agent whose data dir was lost).
	Node string `json:"node,omitempty"`
}

// JoinTokenInfo describes a join token. Token, the whole token with the CA's hash, is
// set only in the answer that creates it: the cluster keeps no copy of the secret.
type JoinTokenInfo struct {
	ID          string    `json:"id"`
	Role        string    `json:"role"`
	Description string    `json:"description,omitempty"`
	Created     time.Time `json:"created"`
	Expires     time.Time `json:"expires,omitzero"`
	Expired     bool      `json:"expired,omitempty"`
	Node        string    `json:"node,omitempty"`
	Token       string    `json:"token,omitempty"`
}
