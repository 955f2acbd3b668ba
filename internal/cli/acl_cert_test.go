package cli

import (
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/pki"
)

// `berth acl token create --client-cert` makes the key here, sends only its CSR for the
// new token, and writes the key (0600), the certificate and the CA; the token is
// printed once as before. `berth acl token certificate` does the same for a token that
// exists.
func TestACLTokenClientCert(t *testing.T) {
	api, url := newFakeAPI(t)
	ca, err := pki.NewCA("test CA", testNow)
	if err != nil {
		t.Fatal(err)
	}
	api.json("POST /v1/acl/tokens", http.StatusCreated,
		`{"id":"berth-acl-abc123","name":"lain","policies":["lain-console"],"created":"2026-11-22T12:00:00Z","secret":"berth-acl-abc123.s3cr3ts3cr3ts3cr3t"}`)
	var gotCSR bool
	certify := func(w http.ResponseWriter, r *http.Request) {
		var req v4.ACLCertificateRequest
		json.Unmarshal([]byte(api.body("POST "+r.URL.Path)), &req) // the fake API read the body
		csr, err := pki.ParseCSR([]byte(req.CSR))
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnprocessableEntity)
			return
		}
		gotCSR = !strings.Contains(req.CSR, "PRIVATE KEY") && req.TTL == "2160h"
		der, _ := ca.Sign(pki.Request{CommonName: "berth-acl-abc123", Organization: pki.OrgUsers, Unit: "b", Client: true}, csr.PublicKey, time.Now())
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(v4.ACLCertificate{Token: "berth-acl-abc123", CA: string(ca.CertPEM), Expires: testNow.Add(90 * 24 * time.Hour),
			Certificate: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))})
	}
	api.mu.Lock()
	api.routes["POST /v1/acl/tokens/berth-acl-abc123/certificate"] = certify
	api.mu.Unlock()

	prefix := filepath.Join(t.TempDir(), "lain-console")
	r := runCLIOK(t, url, "", "acl", "token", "create", "--name", "lain", "--policy", "lain-console", "--client-cert", prefix, "--cert-ttl", "2160h")
	wantContains(t, r.stdout, "berth-acl-abc123.s3cr3ts3cr3ts3cr3t")
	wantContains(t, r.stderr, prefix+".crt", prefix+".key", prefix+"-ca.crt", "expires 2027-02-20T12:00:00Z", "revoking the token ends it")
	if !gotCSR {
		t.Error("the server got no CSR, or a key, or not the TTL")
	}
	checkCertFiles(t, prefix, ca)

	// For a token that exists.
	other := filepath.Join(t.TempDir(), "again")
	r = runCLIOK(t, url, "", "acl", "token", "certificate", "berth-acl-abc123", "--out", other, "--ttl", "2160h")
	wantContains(t, r.stdout, other+".crt")
	checkCertFiles(t, other, ca)

	// A management token gets none, and nothing is asked of the server.
	api.reset()
	r = runCLI(t, url, "", "acl", "token", "create", "--management", "--client-cert", prefix)
	if r.err == nil || !strings.Contains(r.err.Error(), "management token cannot have a client certificate") || len(api.got()) != 0 {
		t.Errorf("management --client-cert: %v, requests %v", r.err, api.got())
	}
	// A directory that does not exist is named before a key is made.
	r = runCLI(t, url, "", "acl", "token", "certificate", "berth-acl-abc123", "--out", "/nonexistent/dir/x")
	if r.err == nil || !strings.Contains(r.err.Error(), "/nonexistent/dir") {
		t.Errorf("missing directory: %v", r.err)
	}
}

func checkCertFiles(t *testing.T, prefix string, ca *pki.CA) {
	t.Helper()
	fi, err := os.Stat(prefix + ".key")
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	pair, err := tls.LoadX509KeyPair(prefix+".crt", prefix+".key")
	if err != nil {
		t.Fatalf("the key is not the certificate's: %v", err)
	}
	if caPEM, _ := os.ReadFile(prefix + "-ca.crt"); string(caPEM) != string(ca.CertPEM) {
		t.Error("the CA file is not the cluster CA")
	}
	if len(pair.Certificate) != 1 {
		t.Errorf("%d certificates", len(pair.Certificate))
	}
}
