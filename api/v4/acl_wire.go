package v4

import "time"

// Users and policies (docs/security.md): the bodies of /v1/acl/... The policies
// themselves are documents of kind acl-policy (internal/acl).

// Whoami answers GET /v1/acl/whoami.
type Whoami struct {
	Token      string   `json:"token,omitempty"`
	Name       string   `json:"name,omitempty"`
	Anonymous  bool     `json:"anonymous,omitempty"`
	Management bool     `json:"management,omitempty"`
	Policies   []string `json:"policies"`
}

// CanI is the body and the answer of POST /v1/acl/can-i.
type CanI struct {
	Verb      string `json:"verb"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Allowed   bool   `json:"allowed"`
}

// CanIList is POST /v1/acl/can-i with several questions ({"checks": [...]}, at most 100)
// and its answer, in the same order.
type CanIList struct {
	Checks []CanI `json:"checks"`
}

// NamespaceList answers GET /v1/namespaces: the namespaces the caller may read in, sorted.
type NamespaceList struct {
	Items []string `json:"items"`
}

// ACLTokenRequest is the body of POST /v1/acl/tokens.
type ACLTokenRequest struct {
	Name       string   `json:"name,omitempty"`
	Policies   []string `json:"policies,omitempty"`
	Management bool     `json:"management,omitempty"`
	// TTL is how long the token works, a Go duration ("720h"); "" or "0" never expires.
	TTL string `json:"ttl,omitempty"`
}

// ACLTokenInfo describes a user's token; Secret, the token itself, is set only in the
// answer that creates it.
type ACLTokenInfo struct {
	ID         string    `json:"id"`
	Name       string    `json:"name,omitempty"`
	Policies   []string  `json:"policies"`
	Management bool      `json:"management,omitempty"`
	Created    time.Time `json:"created"`
	Expires    time.Time `json:"expires,omitzero"`
	Secret     string    `json:"secret,omitempty"`
}

// ACLCertificateRequest is the body of POST /v1/acl/tokens/{id}/certificate: a user's
// client certificate bound to the token (docs/security.md, "Client certificates"). The
// key stays with the client, which sends only its certificate request.
type ACLCertificateRequest struct {
	// CSR is a PEM certificate request (ECDSA P-256 or P-384); only its key is used.
	CSR string `json:"csr"`
	// TTL is how long the certificate is valid, a Go duration ("720h"); "" is the
	// server's certificate lifetime. It never outlives the token.
	TTL string `json:"ttl,omitempty"`
}

// ACLCertificate answers POST /v1/acl/tokens/{id}/certificate.
type ACLCertificate struct {
	// Token is the token the certificate stands for ("berth-acl-<id>").
	Token string `json:"token"`
	// Certificate is the client certificate, and CA the cluster CA, in PEM.
	Certificate string    `json:"certificate"`
	CA          string    `json:"ca"`
	Expires     time.Time `json:"expires"`
}
