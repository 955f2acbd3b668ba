package server

import (
	"crypto/x509"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/pki"
	"github.com/berthhq/berth/internal/store/storetest"
)

func certRequest(t *testing.T, node string) (string, []byte) {
	t.Helper()
	csr, key, err := pki.NewCSR(node)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v4.AgentCertificateRequest{NodeName: node, CSR: string(csr)})
	return string(b), key
}

// wrongLast is token with its last character changed (to one it is not).
func wrongLast(token string) string {
	last := "0"
	if strings.HasSuffix(token, "0") {
		last = "1"
	}
	return token[:len(token)-1] + last
}

// A join token buys a node certificate naming the node, from the cluster CA; a token that
// is unknown, revoked, expired or wrong buys nothing.
func TestAgentCertificateExchange(t *testing.T) {
	url := newTestServer(t, Config{})
	good := storetest.JoinToken(t, testStore, v4.JoinRoleAgent, time.Now().Add(time.Hour)).String()
	expired := storetest.JoinToken(t, testStore, v4.JoinRoleAgent, time.Now().Add(-time.Second)).String()
	revoked := storetest.JoinToken(t, testStore, v4.JoinRoleAgent, time.Time{})
	wantStatus(t, call(t, http.MethodDelete, url+"/v1/jointokens/berth-"+revoked.ID, ""), http.StatusNoContent)

	body, _ := certRequest(t, "n7")
	for _, c := range []struct {
		token string
		code  int
		want  string
	}{
		{anonymous, http.StatusUnauthorized, "a join token is required"},
		{"berth-nope", http.StatusUnauthorized, "join token"},
		{revoked.String(), http.StatusUnauthorized, "unknown or revoked"},
		{wrongLast(good), http.StatusUnauthorized, "unknown or revoked"},
		{expired, http.StatusForbidden, "expired"},
	} {
		r := callAs(t, "", http.MethodPost, url+"/v1/agent/certificate", body, c.token)
		wantStatus(t, r, c.code)
		if msg := decodeError(t, r).Message; !strings.Contains(msg, c.want) || (c.token != anonymous && strings.Contains(msg, c.token[strings.Index(c.token, ".")+1:])) {
			t.Errorf("token %q: %q, want %q and no secret", c.token, msg, c.want)
		}
	}

	r := callAs(t, "", http.MethodPost, url+"/v1/agent/certificate", body, good)
	ans, cert := issuedCertificate(t, r)
	if node, ok := pki.NodeOf(cert); !ok || node != "n7" {
		t.Fatalf("certificate names %v", cert.Subject)
	}
	if _, err := cert.Verify(verifyAsClient(testCA(t))); err != nil {
		t.Fatalf("not a client certificate of the CA: %v", err)
	}
	if ans.CA != string(testCA(t).CertPEM) {
		t.Fatal("the answer's CA is not the cluster's")
	}
	storetest.FlushEvents(t, testStore)
	if !strings.Contains(string(call(t, http.MethodGet, url+"/v1/events?kind=node", "").body), "joined with a join token") {
		t.Error("no NodeJoined event")
	}

	// Bad requests name the field.
	for _, c := range []struct{ body, field string }{
		{`{"nodeName":"UPPER","csr":""}`, "nodeName"},
		{`{"nodeName":"n8","csr":"-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"}`, "csr"},
		{`{"nodeName":"n8","csr":"` + strings.Repeat("A", 20000) + `"}`, "csr"},
	} {
		r := callAs(t, "", http.MethodPost, url+"/v1/agent/certificate", c.body, good)
		wantStatus(t, r, http.StatusBadRequest)
		if e := decodeError(t, r); len(e.Details) != 1 || e.Details[0].Field != c.field {
			t.Errorf("%.40s: details %+v, want %s", c.body, e.Details, c.field)
		}
	}
}

// issuedCertificate reads a 200 answer of the certificate routes, and the certificate
// it carries.
func issuedCertificate(t *testing.T, r response) (v4.AgentCertificate, *x509.Certificate) {
	t.Helper()
	wantStatus(t, r, http.StatusOK)
	var ans v4.AgentCertificate
	if err := json.Unmarshal(r.body, &ans); err != nil {
		t.Fatal(err)
	}
	cert, err := pki.ParseCertificate([]byte(ans.Certificate))
	if err != nil {
		t.Fatal(err)
	}
	return ans, cert
}

// A renewal is for the node the current certificate names: it cannot rename the node.
func TestAgentRenewKeepsTheName(t *testing.T) {
	url := newTestServer(t, Config{CertLifetime: time.Hour})
	csr, _, err := pki.NewCSR("n1")
	if err != nil {
		t.Fatal(err)
	}
	r := agentCall(t, http.MethodPost, url+"/v1/agent/certificate/renew", `{"csr":`+jsonString(string(csr))+`}`)
	_, cert := issuedCertificate(t, r)
	if node, _ := pki.NodeOf(cert); node != "n1" || cert.NotAfter.Sub(cert.NotBefore) > 2*time.Hour {
		t.Fatalf("renewed certificate %v valid %s", cert.Subject, cert.NotAfter.Sub(cert.NotBefore))
	}
	r = agentCall(t, http.MethodPost, url+"/v1/agent/certificate/renew", `{"nodeName":"n2","csr":`+jsonString(string(csr))+`}`)
	wantStatus(t, r, http.StatusForbidden)
	if e := decodeError(t, r); len(e.Details) != 1 || e.Details[0].Field != "nodeName" {
		t.Fatalf("rename: %s", r.body)
	}
}

func TestJoinTokenRoutes(t *testing.T) {
	url := newTestServer(t, Config{})
	r := call(t, http.MethodPost, url+"/v1/jointokens", `{"ttl":"2h","description":"rack 12"}`)
	wantStatus(t, r, http.StatusCreated)
	var created v4.JoinTokenInfo
	if err := json.Unmarshal(r.body, &created); err != nil {
		t.Fatal(err)
	}
	if created.Role != v4.JoinRoleAgent || !strings.HasSuffix(created.Token, "::"+testCA(t).Hash()) ||
		created.Expires.Sub(created.Created) != 2*time.Hour {
		t.Fatalf("created %+v", created)
	}
	r = call(t, http.MethodGet, url+"/v1/jointokens", "")
	wantStatus(t, r, http.StatusOK)
	secret := strings.TrimPrefix(strings.SplitN(created.Token, ".", 2)[1], "")
	secret, _, _ = strings.Cut(secret, "::")
	if strings.Contains(string(r.body), secret) || !strings.Contains(string(r.body), created.ID) {
		t.Fatalf("list shows the secret or lacks the token: %s", r.body)
	}
	for _, c := range []struct{ body, field string }{
		{`{"role":"root"}`, "role"},
		{`{"ttl":"forever"}`, "ttl"},
		{`{"ttl":"-1h"}`, "ttl"},
		{`{"description":"` + strings.Repeat("x", 300) + `"}`, "description"},
	} {
		r := call(t, http.MethodPost, url+"/v1/jointokens", c.body)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if e := decodeError(t, r); len(e.Details) != 1 || e.Details[0].Field != c.field {
			t.Errorf("%s: %s", c.body, r.body)
		}
	}
	wantStatus(t, call(t, http.MethodDelete, url+"/v1/jointokens/"+created.ID, ""), http.StatusNoContent)
	wantStatus(t, call(t, http.MethodDelete, url+"/v1/jointokens/"+created.ID, ""), http.StatusNotFound)
	body, _ := certRequest(t, "n9")
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/agent/certificate", body, created.Token), http.StatusUnauthorized)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A join token cannot buy a certificate for a node name another key holds: that is the
// node's identity, and with it the node's secrets. Its own key may join again; a token
// an administrator bound to the name may take it over; a deleted node's name is free.
func TestJoinCannotTakeAnExistingNodeName(t *testing.T) {
	url := newTestServer(t, Config{})
	good := storetest.JoinToken(t, testStore, v4.JoinRoleAgent, time.Now().Add(time.Hour)).String()
	join := func(node, body, token string) response {
		t.Helper()
		return callAs(t, "", http.MethodPost, url+"/v1/agent/certificate", body, token)
	}
	first, _ := certRequest(t, "victim")
	wantStatus(t, join("victim", first, good), http.StatusOK)
	wantStatus(t, join("victim", first, good), http.StatusOK) // the same key again
	attacker, _ := certRequest(t, "victim")
	r := join("victim", attacker, good)
	wantStatus(t, r, http.StatusConflict)
	if e := decodeError(t, r); len(e.Details) != 1 || e.Details[0].Field != "nodeName" || !strings.Contains(e.Message, "another key") {
		t.Errorf("taken name: %s", r.body)
	}
	// A node registered before keys were recorded is taken as well.
	wantStatus(t, call(t, http.MethodPost, url+"/v1/nodes", nodeJSON("legacy", "")), http.StatusCreated)
	legacy, _ := certRequest(t, "legacy")
	wantStatus(t, join("legacy", legacy, good), http.StatusConflict)

	// A token bound to the name takes it over; it joins no other name.
	r = call(t, http.MethodPost, url+"/v1/jointokens", `{"node":"victim","description":"rejoin"}`)
	wantStatus(t, r, http.StatusCreated)
	var bound v4.JoinTokenInfo
	if err := json.Unmarshal(r.body, &bound); err != nil {
		t.Fatal(err)
	}
	if bound.Node != "victim" || bound.Expires.IsZero() || bound.Expires.After(time.Now().Add(25*time.Hour)) {
		t.Fatalf("bound token: %+v, want node victim and the 24 h default expiry", bound)
	}
	other, _ := certRequest(t, "other")
	wantStatus(t, join("other", other, bound.Token), http.StatusForbidden)
	wantStatus(t, join("victim", attacker, bound.Token), http.StatusOK)
	wantStatus(t, join("victim", first, good), http.StatusConflict) // the old key lost it

	// Deleting the node frees its name.
	wantStatus(t, call(t, http.MethodDelete, url+"/v1/nodes/legacy", ""), http.StatusOK)
	wantStatus(t, join("legacy", legacy, good), http.StatusOK)

	// A server token still never expires by default; a bad node name is a 422.
	r = call(t, http.MethodPost, url+"/v1/jointokens", `{"role":"server"}`)
	wantStatus(t, r, http.StatusCreated)
	var srv v4.JoinTokenInfo
	if err := json.Unmarshal(r.body, &srv); err != nil || !srv.Expires.IsZero() {
		t.Fatalf("server token: %+v %v", srv, err)
	}
	wantStatus(t, call(t, http.MethodPost, url+"/v1/jointokens", `{"node":"Bad Name"}`), http.StatusUnprocessableEntity)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/jointokens", `{"role":"server","node":"n1"}`), http.StatusUnprocessableEntity)
}
