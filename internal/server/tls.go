package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/berthhq/berth/internal/pki"
)

// TLS (docs/security.md, TLS): the API and the agents' endpoints are served over TLS with
// certificates from the cluster CA; the server's own certificate is renewed by itself
// before it expires, and an operator's certificate files are read again when they change,
// both without a restart.

// servingCert provides the certificate the API serves.
type servingCert interface {
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

// servingNames are the names and addresses the server's own certificate is valid for:
// the operator's --tls-san, the listen address, the host's name and loopback.
func servingNames(listen string, sans []string) (dns []string, ips []net.IP) {
	seen := map[string]bool{}
	add := func(n string) {
		if n == "" || seen[n] {
			return
		}
		seen[n] = true
		if ip := net.ParseIP(n); ip != nil {
			if !ip.IsUnspecified() {
				ips = append(ips, ip)
			}
			return
		}
		dns = append(dns, n)
	}
	for _, s := range sans {
		add(s)
	}
	if host, _, err := net.SplitHostPort(listen); err == nil {
		add(host)
	}
	if h, err := os.Hostname(); err == nil {
		add(h)
	}
	for _, n := range []string{"localhost", "127.0.0.1", "::1"} {
		add(n)
	}
	return dns, ips
}

// newServingCert is the server's certificate: the operator's files when given, else one
// the cluster CA issues for the server's names and renews before it expires.
func newServingCert(cfg Config) (servingCert, *pki.Rotating, error) {
	if cfg.TLSCertFile != "" || cfg.TLSKeyFile != "" {
		if cfg.TLSCertFile == "" || cfg.TLSKeyFile == "" {
			return nil, nil, errors.New("give both --tls-cert and --tls-key")
		}
		fc, err := newFileCert(cfg.TLSCertFile, cfg.TLSKeyFile)
		return fc, nil, err
	}
	dns, ips := servingNames(cfg.Listen, cfg.TLSSANs)
	req := pki.Request{CommonName: "berth server " + cfg.ID, Organization: pki.OrgServers, DNSNames: dns, IPs: ips,
		Server: true, Lifetime: cfg.CertLifetime}
	issue := func(context.Context) (pki.KeyPair, error) { return cfg.CA.Issue(req, time.Now()) }
	kp, err := issue(context.Background())
	if err != nil {
		return nil, nil, fmt.Errorf("issue the server's certificate: %w", err)
	}
	// The CA follows the server's certificate, so a joining agent can pin it.
	r, err := pki.NewRotating(kp, issue, cfg.Logger, cfg.CA.Cert)
	return r, r, err
}

// newIdentity is the client certificate the server presents to agents, which accept
// requests only from the cluster's servers.
func newIdentity(cfg Config) (*pki.Rotating, error) {
	req := pki.Request{CommonName: "berth server " + cfg.ID, Organization: pki.OrgServers, Client: true, Lifetime: cfg.CertLifetime}
	issue := func(context.Context) (pki.KeyPair, error) { return cfg.CA.Issue(req, time.Now()) }
	kp, err := issue(context.Background())
	if err != nil {
		return nil, fmt.Errorf("issue the server's client certificate: %w", err)
	}
	return pki.NewRotating(kp, issue, cfg.Logger)
}

// TLSConfig is the API listener's TLS config: the serving certificate, and client
// certificates of the cluster CA verified when given (agents present theirs; users
// present none).
func (s *Server) TLSConfig() *tls.Config {
	return pki.Hardened(&tls.Config{
		GetCertificate: s.serving.GetCertificate,
		ClientAuth:     tls.VerifyClientCertIfGiven,
		ClientCAs:      s.ca.Pool(),
		// HTTP/2 for browsers: the web console holds a watch stream or three per tab, and
		// over HTTP/1.1 a browser's six connections to a host would soon all be held by
		// streams. HTTP/2 for agents: their heartbeat stream, task group watch and calls
		// share one connection, one TLS session per node. The CLI offers HTTP/1.1 only,
		// which exec sessions need (they hijack the connection), as do the console's
		// WebSockets.
		NextProtos: []string{"h2", "http/1.1"},
	})
}

// CA is the cluster CA the server trusts and signs with.
func (s *Server) CA() *pki.CA { return s.ca }

// fileCert serves an operator's certificate files and reads them again when their
// modification time changes (checked at most every fileCertCheck), so a renewed
// certificate is served without a restart.
type fileCert struct {
	certFile, keyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	mtimes  [2]time.Time
	checked time.Time
}

const fileCertCheck = 10 * time.Second

func newFileCert(certFile, keyFile string) (*fileCert, error) {
	f := &fileCert{certFile: certFile, keyFile: keyFile}
	if err := f.load(); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *fileCert) load() error {
	c, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
	if err != nil {
		return fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	f.cert = &c
	f.mtimes = f.stat()
	return nil
}

func (f *fileCert) stat() [2]time.Time {
	var out [2]time.Time
	for i, p := range []string{f.certFile, f.keyFile} {
		if fi, err := os.Stat(p); err == nil {
			out[i] = fi.ModTime()
		}
	}
	return out
}

func (f *fileCert) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if time.Since(f.checked) >= fileCertCheck {
		f.checked = time.Now()
		if f.stat() != f.mtimes {
			old := f.cert
			if err := f.load(); err != nil {
				f.cert = old // half-written files: keep serving the old pair
			}
		}
	}
	return f.cert, nil
}
