package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/pki"
)

const webWriter = `kind: acl-policy
metadata: {name: web-writer}
rules:
  - namespaces: [web]
    kinds: ["*"]
    verbs: [read, write]
`

// issueUserCert asks the server (as the management token) for a certificate bound to
// the token of secret, made from a key of the client's own.
func issueUserCert(t *testing.T, url, secret, ttl string) (response, tls.Certificate) {
	t.Helper()
	sec, err := acl.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	csrPEM, keyPEM, err := pki.NewCSR("ignored: the server names the certificate")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(v4.ACLCertificateRequest{CSR: string(csrPEM), TTL: ttl})
	r := call(t, http.MethodPost, url+"/v1/acl/tokens/berth-acl-"+sec.ID+"/certificate", string(body))
	if r.code != http.StatusCreated {
		return r, tls.Certificate{}
	}
	var ans v4.ACLCertificate
	if err := json.Unmarshal(r.body, &ans); err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair([]byte(ans.Certificate), keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return r, cert
}

// certCall calls with a client certificate and no token.
func certCall(t *testing.T, cert tls.Certificate, method, url, body string) response {
	t.Helper()
	hc := client.HTTPClient(testCA(t).Pool(), func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil })
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return response{code: resp.StatusCode, header: resp.Header, body: out}
}

// A user's certificate is its token: the token's policies, no more, and the answer says
// who it is; it is a client certificate only, of the users' organization, and ends with
// its token.
func TestUserCertificateIsItsToken(t *testing.T) {
	url := newTestServer(t, Config{})
	secret := tokenWithPolicy(t, url, webWriter, "web-writer", "2h")
	r, cert := issueUserCert(t, url, secret, "")
	wantStatus(t, r, http.StatusCreated)
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	sec, _ := acl.ParseSecret(secret)
	if leaf.Subject.CommonName != "berth-acl-"+sec.ID || len(leaf.Subject.Organization) != 1 || leaf.Subject.Organization[0] != pki.OrgUsers {
		t.Fatalf("subject %v", leaf.Subject)
	}
	if len(leaf.ExtKeyUsage) != 1 || leaf.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth {
		t.Fatalf("key usage %v, want client only", leaf.ExtKeyUsage)
	}
	if leaf.NotAfter.After(time.Now().Add(2 * time.Hour)) {
		t.Fatalf("the certificate ends %s, after its token", leaf.NotAfter)
	}

	who := certCall(t, cert, http.MethodGet, url+"/v1/acl/whoami", "")
	wantStatus(t, who, http.StatusOK)
	var me v4.Whoami
	if err := json.Unmarshal(who.body, &me); err != nil || me.Token != "berth-acl-"+sec.ID || me.Anonymous || len(me.Policies) != 1 {
		t.Fatalf("whoami %s (%v)", who.body, err)
	}
	wantStatus(t, certCall(t, cert, http.MethodPost, url+"/v1/namespaces/web/processes", procJSON("web", "api", 1)), http.StatusCreated)
	wantStatus(t, certCall(t, cert, http.MethodGet, url+"/v1/namespaces/web/processes/api", ""), http.StatusOK)
	denied := certCall(t, cert, http.MethodPost, url+"/v1/namespaces/other/processes", procJSON("other", "api", 1))
	wantStatus(t, denied, http.StatusForbidden)
	if msg := decodeError(t, denied).Message; !strings.Contains(msg, "berth-acl-"+sec.ID) || !strings.Contains(msg, "client certificate") {
		t.Errorf("the refusal does not name the certificate's token: %s", msg)
	}
	wantStatus(t, certCall(t, cert, http.MethodPost, url+"/v1/acl/tokens", `{"management":true}`), http.StatusForbidden)
}

// Revoking the token ends its certificate at once; so does a token of the same id made
// later (the certificate carries its own token's binding).
func TestUserCertificateEndsWithItsToken(t *testing.T) {
	srv, url := newTestServerOf(t, Config{})
	secret := tokenWithPolicy(t, url, webWriter, "web-writer", "")
	r, cert := issueUserCert(t, url, secret, "24h")
	wantStatus(t, r, http.StatusCreated)
	wantStatus(t, certCall(t, cert, http.MethodGet, url+"/v1/namespaces/web/processes", ""), http.StatusOK)
	sec, _ := acl.ParseSecret(secret)
	wantStatus(t, call(t, http.MethodDelete, url+"/v1/acl/tokens/berth-acl-"+sec.ID, ""), http.StatusNoContent)
	gone := certCall(t, cert, http.MethodGet, url+"/v1/namespaces/web/processes", "")
	wantStatus(t, gone, http.StatusUnauthorized)
	if !strings.Contains(decodeError(t, gone).Message, "revoked") {
		t.Errorf("401 does not say the token is revoked: %s", gone.body)
	}

	// A token of the revoked one's id, with another secret: the old certificate is not it.
	again, err := acl.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	again.ID = sec.ID
	if err := testStore.CreateACLToken(context.Background(), &acl.Token{ID: again.ID, SecretHash: acl.HashOf(again), Policies: []string{"web-writer"}, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	srv.aclCache.forget() // as the watch of tokens does (acl_changes.go), without its wait
	wantStatus(t, certCall(t, cert, http.MethodGet, url+"/v1/namespaces/web/processes", ""), http.StatusUnauthorized)
}

// An expired token's certificate is refused, and none is issued for it.
func TestUserCertificateOfExpiredToken(t *testing.T) {
	url := newTestServer(t, Config{})
	wantStatus(t, call(t, http.MethodPut, url+"/v1/acl/policies/web-writer", webWriter), http.StatusOK)
	sec, err := acl.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	tok := &acl.Token{ID: sec.ID, SecretHash: acl.HashOf(sec), Policies: []string{"web-writer"}, Created: time.Now().Add(-2 * time.Hour), Expires: time.Now().Add(-time.Hour)}
	if err := testStore.CreateACLToken(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	r, _ := issueUserCert(t, url, sec.String(), "")
	wantStatus(t, r, http.StatusUnprocessableEntity)
	// A certificate issued while the token was valid (made here as the server makes it).
	kp, err := testCA(t).Issue(pki.Request{CommonName: "berth-acl-" + sec.ID, Organization: pki.OrgUsers, Unit: tok.CertBinding(), Client: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	expired := certCall(t, cert, http.MethodGet, url+"/v1/namespaces/web/processes", "")
	wantStatus(t, expired, http.StatusUnauthorized)
	if !strings.Contains(decodeError(t, expired).Message, "expired") {
		t.Errorf("401 does not say the token expired: %s", expired.body)
	}
}

// A node's certificate is no user's, and a user's is no node's: neither reaches the
// other's routes.
func TestUserAndNodeCertificatesApart(t *testing.T) {
	url := newTestServer(t, Config{})
	wantStatus(t, agentCall(t, http.MethodPost, url+"/v1/agent/register", nodeJSON("n1", "")), http.StatusCreated)
	// A node's certificate without a token is anonymous on users' routes.
	wantStatus(t, callAs(t, "n1", http.MethodGet, url+"/v1/namespaces/web/processes", "", ""), http.StatusUnauthorized)

	secret := tokenWithPolicy(t, url, readOnly, "readonly", "")
	r, cert := issueUserCert(t, url, secret, "")
	wantStatus(t, r, http.StatusCreated)
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1/agent/nodes/n1/taskgroups", ""},
		{http.MethodPost, "/v1/agent/register", nodeJSON("n1", "")},
		{http.MethodPost, "/v1/agent/certificate/renew", "{}"},
		{http.MethodGet, "/v1/agent/catalog", ""},
	} {
		wantStatus(t, certCall(t, cert, c.method, url+c.path, c.body), http.StatusUnauthorized)
	}
	// A certificate of the users' organization that names a node is no user either.
	kp, err := testCA(t).Issue(pki.Request{CommonName: "n1", Organization: pki.OrgUsers, Unit: "x", Client: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	odd, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, certCall(t, odd, http.MethodGet, url+"/v1/namespaces/web/processes", ""), http.StatusUnauthorized)
}

// Issuing a certificate: only an administrator, only for a token with policies, from a
// valid CSR and TTL; each refusal names its field.
func TestUserCertificateRequests(t *testing.T) {
	url := newTestServer(t, Config{})
	secret := tokenWithPolicy(t, url, webWriter, "web-writer", "")
	sec, _ := acl.ParseSecret(secret)
	path := url + "/v1/acl/tokens/berth-acl-" + sec.ID + "/certificate"
	csrPEM, _, err := pki.NewCSR("x")
	if err != nil {
		t.Fatal(err)
	}
	ask := func(token, csr, ttl string) response {
		body, _ := json.Marshal(v4.ACLCertificateRequest{CSR: csr, TTL: ttl})
		return callAs(t, "", http.MethodPost, path, string(body), token)
	}
	// A token may not get a certificate, not even for itself.
	wantStatus(t, ask(secret, string(csrPEM), ""), http.StatusForbidden)
	for _, c := range []struct{ csr, ttl, field string }{
		{"not a csr", "", "csr"},
		{string(csrPEM), "forever", "ttl"},
		{string(csrPEM), "-1h", "ttl"},
		{string(csrPEM), "100000h", "ttl"},
	} {
		r := ask("", c.csr, c.ttl)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if d := decodeError(t, r).Details; len(d) != 1 || d[0].Field != c.field {
			t.Errorf("csr %q ttl %q: details %+v, want %s", c.csr, c.ttl, d, c.field)
		}
	}
	r := callAs(t, "", http.MethodPost, url+"/v1/acl/tokens/berth-acl-zzzzzz/certificate", `{"csr":`+jsonString(string(csrPEM))+`}`, "")
	wantStatus(t, r, http.StatusNotFound)
	r = callAs(t, "", http.MethodPost, url+"/v1/acl/tokens/..%2F..%2Fpolicies%2Fweb-writer/certificate", `{"csr":`+jsonString(string(csrPEM))+`}`, "")
	wantStatus(t, r, http.StatusNotFound)
	// The management token has every right: no certificate stands for it.
	admin, _ := acl.ParseSecret(adminToken)
	r = callAs(t, "", http.MethodPost, url+"/v1/acl/tokens/berth-acl-"+admin.ID+"/certificate", `{"csr":`+jsonString(string(csrPEM))+`}`, "")
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if d := decodeError(t, r).Details; len(d) != 1 || d[0].Field != "id" {
		t.Errorf("details %+v, want id", d)
	}
}

// A user's certificate is held to the limits of each source, as a token is: only nodes
// and servers are members.
func TestUserCertificateIsNoMember(t *testing.T) {
	ca := testCA(t)
	for _, c := range []struct {
		req    pki.Request
		member bool
	}{
		{pki.Request{CommonName: "berth-acl-abc123", Organization: pki.OrgUsers, Unit: "b", Client: true}, false},
		{pki.Request{CommonName: "n1", Organization: pki.OrgNodes, Client: true}, true},
		{pki.Request{CommonName: "berth server s1", Organization: pki.OrgServers, Client: true}, true},
	} {
		kp, err := ca.Issue(c.req, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		cert, err := pki.ParseCertificate(kp.CertPEM)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}, VerifiedChains: [][]*x509.Certificate{{cert, ca.Cert}}}
		if member(r) != c.member {
			t.Errorf("%s: member %v, want %v", c.req.Organization, member(r), c.member)
		}
	}
}
