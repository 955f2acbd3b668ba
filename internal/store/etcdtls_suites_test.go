package store

import (
	"crypto/tls"
	"net/url"
	"testing"
)

// The embedded etcd's client port speaks TLS 1.2 with AEAD suites only, like the API: a
// client offering nothing but a CBC suite with SHA-1 is refused at the handshake.
func TestEmbeddedEtcdRefusesCBCSuites(t *testing.T) {
	if testStore.ClientTLS() == nil {
		t.Skip("the test store is not an embedded member")
	}
	u, err := url.Parse(testStore.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		suite   uint16
		refused bool
	}{
		{"ECDHE-ECDSA AES-128-CBC-SHA", tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, true},
		{"ECDHE-ECDSA AES-128-GCM", tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conf := testStore.ClientTLS()
			conf.MaxVersion, conf.CipherSuites, conf.ServerName = tls.VersionTLS12, []uint16{tc.suite}, u.Hostname()
			conn, err := tls.Dial("tcp", u.Host, conf)
			if err == nil {
				conn.Close()
			}
			if tc.refused != (err != nil) {
				t.Fatalf("dial %s: %v, want refused=%v", u.Host, err, tc.refused)
			}
		})
	}
}
