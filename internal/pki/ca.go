// Package pki is berth's certificate authority (docs/security.md, TLS and identities): a
// cluster CA (ECDSA P-256) that signs the servers' serving certificates and the nodes'
// client certificates, the CA pin a join token carries, and certificates that renew
// themselves before they expire. Identities are certificate names: a node's certificate
// has CommonName = the node's name and Organization = OrgNodes; a server's has
// Organization = OrgServers; a user's (a certificate bound to an ACL token) has
// CommonName = the token's name and Organization = OrgUsers.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"
)

// The organizations that tell what a certificate's holder is.
const (
	OrgNodes   = "berth:nodes"
	OrgServers = "berth:servers"
	OrgUsers   = "berth:users"
)

// Lifetimes of what the CA issues, unless the caller gives its own.
const (
	CALifetime   = 10 * 365 * 24 * time.Hour
	CertLifetime = 365 * 24 * time.Hour
	// clockSkew backdates NotBefore, so a peer whose clock is a little behind accepts a
	// certificate issued just now.
	clockSkew = 5 * time.Minute
)

// CA is the cluster's certificate authority: its certificate and its private key.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     crypto.Signer
}

// NewCA creates a CA named name with a new ECDSA P-256 key.
func NewCA(name string, now time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("create CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"berth"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(CALifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	return &CA{Cert: cert, CertPEM: encodePEM("CERTIFICATE", der), key: key}, nil
}

// ParseCA reads a CA from its certificate and private key in PEM.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := ParseCertificate(certPEM)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, errors.New("CA certificate: not a CA (basic constraints)")
	}
	key, err := ParsePrivateKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, errors.New("the CA key does not belong to the CA certificate")
	}
	return &CA{Cert: cert, CertPEM: certPEM, key: key}, nil
}

// KeyPEM is the CA's private key in PEM (PKCS #8): to be stored sealed, never in the clear.
func (ca *CA) KeyPEM() ([]byte, error) { return marshalKey(ca.key) }

// Pool is a pool holding the CA certificate alone.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Hash is the CA's pin: "sha256:" and the hex SHA-256 of its public key (the
// SubjectPublicKeyInfo), as kubeadm's --discovery-token-ca-cert-hash.
func (ca *CA) Hash() string { return Hash(ca.Cert) }

// Hash is the pin of cert's public key.
func Hash(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Request is what a certificate is issued for.
type Request struct {
	// CommonName and Organization name the holder.
	CommonName   string
	Organization string
	// Unit, when set, is the subject's one OrganizationalUnit: a user's certificate
	// carries its token's binding there (UserOf).
	Unit string
	// DNSNames and IPs are the names a serving certificate answers for.
	DNSNames []string
	IPs      []net.IP
	// Server and Client say whether the certificate serves TLS, authenticates a client,
	// or both.
	Server, Client bool
	// Lifetime is how long it is valid (default CertLifetime, never past the CA).
	Lifetime time.Duration
	// NotAfter, when set, is the latest the certificate may be valid to: a user's
	// certificate never outlives its token.
	NotAfter time.Time
}

// Sign issues a certificate for pub and returns it in DER.
func (ca *CA) Sign(req Request, pub crypto.PublicKey, now time.Time) ([]byte, error) {
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	life := req.Lifetime
	if life <= 0 {
		life = CertLifetime
	}
	notAfter := now.Add(life)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	if !req.NotAfter.IsZero() && notAfter.After(req.NotAfter) {
		notAfter = req.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: req.CommonName},
		// Short-lived certificates are backdated by a tenth of their life at most, so they
		// are renewed (two thirds in) after about the time asked for.
		NotBefore:   now.Add(-min(clockSkew, life/10)),
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		DNSNames:    req.DNSNames,
		IPAddresses: req.IPs,
	}
	if req.Organization != "" {
		tmpl.Subject.Organization = []string{req.Organization}
	}
	if req.Unit != "" {
		tmpl.Subject.OrganizationalUnit = []string{req.Unit}
	}
	if req.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if req.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.key)
	if err != nil {
		return nil, fmt.Errorf("sign certificate for %q: %w", req.CommonName, err)
	}
	return der, nil
}

// KeyPair is a certificate with its private key, in PEM.
type KeyPair struct {
	CertPEM, KeyPEM []byte
}

// Issue creates a key and a certificate for it.
func (ca *CA) Issue(req Request, now time.Time) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, fmt.Errorf("create key for %q: %w", req.CommonName, err)
	}
	der, err := ca.Sign(req, key.Public(), now)
	if err != nil {
		return KeyPair{}, err
	}
	keyPEM, err := marshalKey(key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{CertPEM: encodePEM("CERTIFICATE", der), KeyPEM: keyPEM}, nil
}

// ParseCertificate reads the first certificate of a PEM bundle.
func ParseCertificate(data []byte) (*x509.Certificate, error) {
	certs, err := ParseCertificates(data)
	if err != nil {
		return nil, err
	}
	return certs[0], nil
}

// ParseCertificates reads every certificate of a PEM bundle; it needs at least one.
func ParseCertificates(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse certificate: %w", err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return out, nil
}

// ParsePrivateKey reads a PEM private key (PKCS #8, SEC 1 EC or PKCS #1 RSA).
func ParsePrivateKey(data []byte) (crypto.Signer, error) {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, errors.New("no PEM private key found")
		}
		if !strings.HasSuffix(b.Type, "PRIVATE KEY") {
			continue
		}
		if k, err := x509.ParsePKCS8PrivateKey(b.Bytes); err == nil {
			if s, ok := k.(crypto.Signer); ok {
				return s, nil
			}
			return nil, errors.New("private key cannot sign")
		}
		if k, err := x509.ParseECPrivateKey(b.Bytes); err == nil {
			return k, nil
		}
		if k, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
			return k, nil
		}
		return nil, fmt.Errorf("parse private key (%s): unsupported format", b.Type)
	}
}

func marshalKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode private key: %w", err)
	}
	return encodePEM("PRIVATE KEY", der), nil
}

func encodePEM(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func newSerial() (*big.Int, error) {
	s, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("certificate serial: %w", err)
	}
	return s, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ea, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ea.Equal(b)
}
