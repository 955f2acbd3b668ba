package v4

import "time"

// CertificateRequest is a signing request to the cluster CA for a webhook's serving
// certificate (docs/policy.md, "Admission webhooks"): `berth certificate sign` sends a
// CSR and the names the certificate is for; an administrator approves (or denies) it;
// the approved request holds the certificate. Only the CSR's key is taken from it:
// names, usage (serving TLS only) and lifetime are the request's, checked by the
// server.
type CertificateRequest struct {
	Name string `json:"name"`
	// CSR is the PEM certificate signing request (ECDSA P-256 or P-384).
	CSR string `json:"csr"`
	// DNSNames and IPs are the names the certificate serves; the CSR's when left out.
	DNSNames []string `json:"dnsNames,omitempty"`
	IPs      []string `json:"ips,omitempty"`
	// TTL is how long the certificate is valid (default the server's certificate
	// lifetime, at most a year).
	TTL string `json:"ttl,omitempty"`

	// Written by the server.
	Requester   string    `json:"requester,omitempty"`
	Created     time.Time `json:"created,omitzero"`
	Status      string    `json:"status,omitempty"` // Pending, Approved or Denied
	Approver    string    `json:"approver,omitempty"`
	Message     string    `json:"message,omitempty"`
	Certificate string    `json:"certificate,omitempty"`
	CA          string    `json:"ca,omitempty"`
	Expires     time.Time `json:"expires,omitzero"`
}

// The states of a certificate request.
const (
	CertPending  = "Pending"
	CertApproved = "Approved"
	CertDenied   = "Denied"
)

// CertificateRequestList is the answer of GET /v1/certificaterequests.
type CertificateRequestList struct {
	Items []CertificateRequest `json:"items"`
}
