package pki

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

// handshake pits a client against a server over a pipe and returns the client's error
// and the negotiated state.
func handshake(t *testing.T, server, client *tls.Config) (tls.ConnectionState, error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	deadline := time.Now().Add(10 * time.Second)
	a.SetDeadline(deadline)
	b.SetDeadline(deadline)
	srv := tls.Server(a, server)
	done := make(chan error, 1)
	go func() {
		done <- srv.Handshake()
		a.Close() // the raw pipe, not the TLS conn: no close_notify to wait on a synchronous pipe
	}()
	cl := tls.Client(b, client)
	err := cl.Handshake()
	st := cl.ConnectionState()
	b.Close()
	<-done
	return st, err
}

// testPair is a server config of the cluster CA, hardened, and a client trusting it.
func testPair(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	ca := newTestCA(t)
	kp, err := ca.Issue(Request{CommonName: "s", Organization: OrgServers, DNSNames: []string{"berth.test"}, Server: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return Hardened(&tls.Config{Certificates: []tls.Certificate{cert}}), ca.Pool()
}

// A hardened server speaks TLS 1.3, and TLS 1.2 with AEAD suites only: a client offering
// only a CBC suite with SHA-1 (or SHA-256), or TLS 1.1, is refused.
func TestHardenedRefusesCBCSuites(t *testing.T) {
	server, roots := testPair(t)
	client := func(maxVersion uint16, suites ...uint16) *tls.Config {
		return &tls.Config{RootCAs: roots, ServerName: "berth.test", MinVersion: tls.VersionTLS10, MaxVersion: maxVersion, CipherSuites: suites}
	}
	cases := []struct {
		name   string
		client *tls.Config
		ok     bool
	}{
		{"1.2 ECDHE-ECDSA AES-128-CBC-SHA", client(tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA), false},
		{"1.2 ECDHE-ECDSA AES-256-CBC-SHA", client(tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA), false},
		{"1.2 ECDHE-RSA AES-128-CBC-SHA", client(tls.VersionTLS12, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA), false},
		{"1.2 ECDHE-ECDSA AES-128-CBC-SHA256", client(tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256), false},
		{"1.2 RSA key exchange AES-128-GCM", client(tls.VersionTLS12, tls.TLS_RSA_WITH_AES_128_GCM_SHA256), false},
		{"1.1", client(tls.VersionTLS11), false},
		{"1.2 ECDHE-ECDSA AES-128-GCM", client(tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256), true},
		{"1.2 ECDHE-ECDSA AES-256-GCM", client(tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384), true},
		{"1.2 ECDHE-ECDSA ChaCha20-Poly1305", client(tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256), true},
		{"1.2 with Go's defaults", client(tls.VersionTLS12), true},
		{"1.3", client(tls.VersionTLS13), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, err := handshake(t, server, tc.client)
			if tc.ok != (err == nil) {
				t.Fatalf("handshake: %v, want ok=%v", err, tc.ok)
			}
			if err == nil && st.Version == tls.VersionTLS12 && !slices.Contains(CipherSuites(), st.CipherSuite) {
				t.Fatalf("negotiated %s", tls.CipherSuiteName(st.CipherSuite))
			}
		})
	}
}

// A hardened client refuses a TLS 1.2 server that offers CBC suites only.
func TestHardenedClientRefusesCBCServer(t *testing.T) {
	server, roots := testPair(t)
	cbc := server.Clone()
	cbc.MaxVersion = tls.VersionTLS12
	cbc.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}
	if _, err := handshake(t, cbc, Hardened(&tls.Config{RootCAs: roots, ServerName: "berth.test"})); err == nil {
		t.Fatal("a hardened client agreed to a CBC suite")
	}
}

// Every suite of the list is ECDHE with an AEAD, and Hardened keeps a higher floor.
func TestCipherSuitesAreAEAD(t *testing.T) {
	for _, id := range CipherSuites() {
		name := tls.CipherSuiteName(id)
		if !strings.HasPrefix(name, "TLS_ECDHE_") || !(strings.Contains(name, "_GCM_") || strings.Contains(name, "_CHACHA20_POLY1305_")) {
			t.Errorf("suite %s is not an ECDHE AEAD suite", name)
		}
	}
	if c := Hardened(&tls.Config{MinVersion: tls.VersionTLS13}); c.MinVersion != tls.VersionTLS13 {
		t.Errorf("Hardened lowered a TLS 1.3 floor to %x", c.MinVersion)
	}
	if c := Hardened(&tls.Config{}); c.MinVersion != tls.VersionTLS12 {
		t.Errorf("Hardened left the floor at %x", c.MinVersion)
	}
}
