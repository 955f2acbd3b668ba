package server

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/pki"
)

// A webhook's certificate: a token with write on certificaterequest sends a CSR, only an
// administrator approves it, and it serves TLS only, as berth:webhooks, never for the
// API's own names.
func TestCertificateRequests(t *testing.T) {
	url := newTestServer(t, Config{})
	csr, _, err := pki.NewCSR("hook")
	if err != nil {
		t.Fatal(err)
	}
	requester := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: csr}
rules:
  - {kinds: [certificaterequest], verbs: [read, write]}
`, "csr", "")
	tenant := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: tenant}
rules:
  - {namespaces: ["*"], kinds: ["*"], verbs: ["*"]}
`, "tenant", "")
	body := func(name string, ips ...string) string {
		b, _ := json.Marshal(v4.CertificateRequest{Name: name, CSR: string(csr), IPs: ips})
		return string(b)
	}
	// A namespace's token, even with every verb on every kind, has no right to the CA.
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/certificaterequests", body("x", "127.0.0.9"), tenant), http.StatusForbidden)
	for _, c := range []struct{ name, field string }{{"127.0.0.1", "ips[0]"}, {"::1", "ips[0]"}, {"nope", "ips[0]"}} {
		r := callAs(t, "", http.MethodPost, url+"/v1/certificaterequests", body("bad", c.name), requester)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if e := decodeError(t, r); len(e.Details) == 0 || e.Details[0].Field != c.field {
			t.Errorf("%s: %+v, want %s", c.name, e, c.field)
		}
	}
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/certificaterequests", body("hook", "127.0.0.9"), requester), http.StatusCreated)
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/certificaterequests/hook/approve", "", requester), http.StatusForbidden)
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/certificaterequests/hook/approve", "", tenant), http.StatusForbidden)
	r := call(t, http.MethodPost, url+"/v1/certificaterequests/hook/approve", "")
	wantStatus(t, r, http.StatusOK)
	var got v4.CertificateRequest
	if err := json.Unmarshal(r.body, &got); err != nil || got.Status != v4.CertApproved {
		t.Fatalf("%v: %+v", err, got)
	}
	b, _ := pem.Decode([]byte(got.Certificate))
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth || cert.Subject.Organization[0] != orgWebhooks ||
		len(cert.IPAddresses) != 1 || cert.IPAddresses[0].String() != "127.0.0.9" || pki.IsServer(cert) {
		t.Fatalf("certificate %+v %v %v", cert.ExtKeyUsage, cert.Subject, cert.IPAddresses)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: testCA(t).Pool()}); err != nil {
		t.Fatal(err)
	}
	r = call(t, http.MethodPost, url+"/v1/certificaterequests/hook/approve", "")
	wantStatus(t, r, http.StatusConflict)
	if !strings.Contains(decodeError(t, r).Message, "Approved already") {
		t.Fatalf("%s", r.body)
	}
}
