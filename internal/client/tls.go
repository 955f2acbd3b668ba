package client

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"time"

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
	// HTTP/1.1: exec and the CLI's log and attach sessions hijack the connection, which
	// HTTP/2 cannot give.
	t.ForceAttemptHTTP2 = false
	return &http.Client{Transport: t}
}

// Health checks of an HTTP/2 connection (MultiplexedHTTPClient): a connection on which
// nothing arrived for h2PingAfter is sent a ping, and closed when no answer came within
// h2PingWait, or when a write made no progress for h2WriteWait. Over HTTP/1.1 a stream
// that a frozen server stopped answering took its connection with it when the agent gave
// it up; over HTTP/2 giving up a stream leaves its connection open, and the next stream
// would go to the same dead server: the pings close it instead, so every stream on it
// fails and the next dial goes to a server that answers.
// Variables for tests.
var (
	h2PingAfter = 10 * time.Second
	h2PingWait  = 10 * time.Second
	h2WriteWait = 15 * time.Second
)

// MultiplexedHTTPClient is HTTPClientTLS for an agent's calls to its servers: HTTP/2
// when the server offers it (berth servers do), so its heartbeat stream, its task group
// watch and its reports are streams of one connection, and the server holds one TLS
// session per node instead of three or four; HTTP/1.1 with a server that does not. Its
// clients cannot exec (exec hijacks an HTTP/1.1 connection): use HTTPClientTLS for that.
func MultiplexedHTTPClient(conf *tls.Config) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.TLSClientConfig = conf
	protos := new(http.Protocols)
	protos.SetHTTP1(true)
	protos.SetHTTP2(true)
	t.Protocols = protos
	t.HTTP2 = &http.HTTP2Config{SendPingTimeout: h2PingAfter, PingTimeout: h2PingWait, WriteByteTimeout: h2WriteWait}
	return &http.Client{Transport: t}
}

// multiplexes reports whether rt may carry concurrent requests as streams of one
// connection (HTTP/2), where a request must not ask for its connection to be closed: the
// connection is everyone's.
func multiplexes(rt http.RoundTripper) bool {
	t, ok := rt.(*http.Transport)
	if !ok {
		return false
	}
	if t.Protocols != nil {
		return t.Protocols.HTTP2()
	}
	return t.ForceAttemptHTTP2
}
