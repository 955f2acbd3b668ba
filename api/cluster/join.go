package cluster

// MemberAdd is the body of POST /v1/cluster/members: a joining server's etcd member.
type MemberAdd struct {
	Name    string `json:"name"`
	PeerURL string `json:"peerURL"`
}

// Joined is the answer of POST /v1/cluster/members: what the new member starts etcd
// with, and what it keeps as its own.
type Joined struct {
	Name    string `json:"name"`
	PeerURL string `json:"peerURL"`
	// InitialCluster is every member's peer URLs, the new one by its name
	// ("name=peerURL,...").
	InitialCluster string `json:"initialCluster"`
	// EncryptionKeys is the cluster's encryption key file: every server seals and opens
	// secrets with the same keys (docs/security.md).
	EncryptionKeys string `json:"encryptionKeys,omitempty"`
	// CACert and CAKey are the cluster CA (PEM): the new member's etcd speaks TLS with
	// certificates of it before it can read the cluster's copy.
	CACert string `json:"caCert"`
	CAKey  string `json:"caKey"`
}
