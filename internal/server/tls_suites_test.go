package server

import (
	"crypto/tls"
	"strings"
	"testing"
)

// The API listener and the server's external etcd client speak TLS 1.2 with AEAD suites
// only: a client offering nothing but a CBC suite with SHA-1 is refused; one offering
// AES-GCM or ChaCha20-Poly1305, or TLS 1.3, gets in.
func TestAPIRefusesCBCSuites(t *testing.T) {
	_, url := newTestServerOf(t, Config{})
	addr := strings.TrimPrefix(url, "https://")
	cases := []struct {
		name    string
		max     uint16
		suite   uint16
		refused bool
	}{
		{"ECDHE-ECDSA AES-128-CBC-SHA", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, true},
		{"ECDHE-RSA AES-256-CBC-SHA", tls.VersionTLS12, tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA, true},
		{"RSA AES-128-CBC-SHA", tls.VersionTLS12, tls.TLS_RSA_WITH_AES_128_CBC_SHA, true},
		{"ECDHE-ECDSA AES-128-GCM", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, false},
		{"ECDHE-ECDSA ChaCha20-Poly1305", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, false},
		{"TLS 1.3", tls.VersionTLS13, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conf := &tls.Config{RootCAs: testCA(t).Pool(), ServerName: "127.0.0.1", MaxVersion: tc.max}
			if tc.suite != 0 {
				conf.CipherSuites = []uint16{tc.suite}
			}
			conn, err := tls.Dial("tcp", addr, conf)
			if err == nil {
				conn.Close()
			}
			if tc.refused != (err != nil) {
				t.Fatalf("dial: %v, want refused=%v", err, tc.refused)
			}
		})
	}
}
