package store

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/pki"
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

// The embedded etcd takes only its members' and the servers' store clients'
// certificates: a node's or a user's certificate of the same CA gets no answer.
func TestEmbeddedEtcdTakesOnlyItsOwnClients(t *testing.T) {
	ca := testStore.LocalCA()
	if ca == nil {
		t.Skip("the test store is not an embedded member")
	}
	u, err := url.Parse(testStore.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		req     pki.Request
		refused bool
	}{
		{"a node", pki.Request{CommonName: "n1", Organization: pki.OrgNodes, Client: true}, true},
		{"a user", pki.Request{CommonName: "berth-acl-abc123", Organization: pki.OrgUsers, Unit: "b", Client: true}, true},
		{"a server's API client", pki.Request{CommonName: "berth server s1", Organization: pki.OrgServers, Client: true}, true},
		{"the store's client", pki.Request{CommonName: etcdClientCN, Organization: pki.OrgServers, Client: true}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kp, err := ca.Issue(tc.req, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
			if err != nil {
				t.Fatal(err)
			}
			conf := pki.Hardened(&tls.Config{RootCAs: ca.Pool(), ServerName: u.Hostname(), Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}})
			conn, err := tls.Dial("tcp", u.Host, conf)
			if err == nil {
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(10 * time.Second))
				// At TLS 1.3 the server checks the client's certificate after the
				// client's handshake ends: a refusal comes with the first read.
				_, err = fmt.Fprintf(conn, "GET /version HTTP/1.1\r\nHost: %s\r\n\r\n", u.Host)
				if err == nil {
					var line string
					line, err = bufio.NewReader(conn).ReadString('\n')
					if err == nil && !strings.HasPrefix(line, "HTTP/1.1 200") {
						err = fmt.Errorf("answer %q", line)
					}
				}
			}
			if tc.refused != (err != nil) {
				t.Fatalf("%s: %v, want refused=%v", tc.name, err, tc.refused)
			}
		})
	}
}
