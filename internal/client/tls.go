package client

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"

	"github.com/berthhq/berth/internal/pki"
)

// TLS: berth servers serve HTTPS with certificates from the cluster CA (docs/security.md).
// A client trusts that CA (ca.crt in a server's data dir, or --ca-cert), or the system's
// roots when the operator gave the servers certificates of a public CA.

// LoadCAFile reads a PEM file of CA certificates into a pool.
func LoadCAFile(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	certs, err := pki.ParseCertificates(data)
	if err != nil {
		return nil, fmt.Errorf("CA certificate %s: %w", path, err)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// HTTPClient is an *http.Client for berth servers that trusts roots (nil: the system's)
// and, when getCert is set, presents that client certificate (an agent's). It has no
// overall timeout: calls take their deadlines from their contexts.
func HTTPClient(roots *x509.CertPool, getCert func(*tls.CertificateRequestInfo) (*tls.Certificate, error)) *http.Client {
	return HTTPClientTLS(pki.Hardened(&tls.Config{RootCAs: roots, GetClientCertificate: getCert}))
}

// HTTPClientTLS is HTTPClient with a whole TLS config (a pinned one, for joining).
func HTTPClientTLS(conf *tls.Config) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil // berth servers are reached directly
	t.TLSClientConfig = conf
	// HTTP/1.1: exec hijacks the connection, and HTTP/2 is not offered by the servers.
	t.ForceAttemptHTTP2 = false
	return &http.Client{Transport: t}
}
