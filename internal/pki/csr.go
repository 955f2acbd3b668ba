package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
)

// maxCSRBytes bounds a CSR a server accepts: a P-256 CSR is about 400 bytes.
const maxCSRBytes = 16 << 10

// NewCSR creates a key and a certificate signing request for commonName; the key never
// leaves the caller.
func NewCSR(commonName string) (csrPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("create key: %w", err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: commonName},
	}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("create certificate request: %w", err)
	}
	keyPEM, err = marshalKey(key)
	if err != nil {
		return nil, nil, err
	}
	return encodePEM("CERTIFICATE REQUEST", der), keyPEM, nil
}

// ParseCSR reads a PEM certificate signing request and checks its signature, which proves
// the sender holds the key. Only what the CSR's key is matters: the signer decides every
// name and usage of the certificate itself.
func ParseCSR(data []byte) (*x509.CertificateRequest, error) {
	if len(data) > maxCSRBytes {
		return nil, fmt.Errorf("certificate request: %d bytes, at most %d", len(data), maxCSRBytes)
	}
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("certificate request: no PEM CERTIFICATE REQUEST block")
	}
	csr, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("certificate request: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("certificate request: bad signature: %w", err)
	}
	switch k := csr.PublicKey.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() {
			return nil, errors.New("certificate request: use an ECDSA P-256 or P-384 key")
		}
	default:
		return nil, fmt.Errorf("certificate request: %T keys are not accepted: use ECDSA P-256", csr.PublicKey)
	}
	return csr, nil
}

// NodeOf returns the node a verified certificate names, and whether it is a node's.
func NodeOf(cert *x509.Certificate) (string, bool) {
	if cert == nil || !hasOrg(cert, OrgNodes) || cert.Subject.CommonName == "" {
		return "", false
	}
	return cert.Subject.CommonName, true
}

// UserOf returns what a verified user's certificate names: the ACL token it stands for
// (its CommonName, "berth-acl-<id>") and the token's binding (its one
// OrganizationalUnit), which the server compares with the token's own, so that a
// certificate outlives neither its token nor a later token of the same id. A node's or a
// server's certificate is never a user's.
func UserOf(cert *x509.Certificate) (token, binding string, ok bool) {
	if cert == nil || !hasOrg(cert, OrgUsers) || cert.Subject.CommonName == "" || len(cert.Subject.OrganizationalUnit) != 1 {
		return "", "", false
	}
	return cert.Subject.CommonName, cert.Subject.OrganizationalUnit[0], true
}

// IsServer reports whether a verified certificate is a berth server's.
func IsServer(cert *x509.Certificate) bool { return cert != nil && hasOrg(cert, OrgServers) }

func hasOrg(cert *x509.Certificate, org string) bool {
	// Exactly one organization: a certificate naming both roles is nobody's.
	return len(cert.Subject.Organization) == 1 && cert.Subject.Organization[0] == org
}
