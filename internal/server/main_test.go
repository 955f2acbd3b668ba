package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/pki"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/cache/cachetest"
	"github.com/berthhq/berth/internal/store/storetest"
)

// testStore is one embedded etcd for the package's tests; each test uses its own namespace.
var testStore *store.Store

func TestMain(m *testing.M) { os.Exit(storetest.Run(m, &testStore)) }

func quietLogger() *slog.Logger { return storetest.QuietLogger() }

// newTestServer serves a fresh Server over the shared store.
func newTestServer(t testing.TB, cfg Config) string {
	t.Helper()
	_, url := newTestServerOf(t, cfg)
	return url
}

// newTestServerOf is newTestServer that also returns the Server.
func newTestServerOf(t testing.TB, cfg Config) (*Server, string) {
	t.Helper()
	storetest.Reset(t, testStore) // start clean, also under go test -count=N
	return startTestServer(t, cfg, testStore)
}

// startTestServer serves a new Server over st with TLS, as Run does, with the package's
// test CA unless cfg has one; the URL is https.
func startTestServer(t testing.TB, cfg Config, st *store.Store) (*Server, string) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	if cfg.CA == nil {
		cfg.CA = testCA(t)
	}
	if cfg.Caches == nil {
		cfg.Caches = cachetest.Registry(t, st, controller.RegisterCaches)
	}
	srv, err := New(cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	adminToken = newManagementToken(t, st)
	ts := httptest.NewUnstartedServer(srv.Handler())
	ts.Listener = tls.NewListener(ts.Listener, srv.TLSConfig())
	ts.Config.ConnState = srv.ConnState // as Run does
	ts.Start()
	t.Cleanup(func() {
		srv.Close() // end watch streams, or ts.Close waits for them
		ts.Close()
	})
	return srv, "https://" + ts.Listener.Addr().String()
}

// The package's tests share one CA: users' calls trust it, agents' calls present a node
// certificate from it.
var (
	testCAOnce sync.Once
	testCAVal  *pki.CA
	testCAErr  error
	clientsMu  sync.Mutex
	clients    = map[string]*http.Client{}
	// roots are the CAs the test clients trust: the test CA.
	roots *x509.CertPool
)

func testCA(t testing.TB) *pki.CA {
	t.Helper()
	testCAOnce.Do(func() {
		testCAVal, testCAErr = pki.NewCA("berth test CA", time.Now())
		if testCAErr == nil {
			roots = testCAVal.Pool()
		}
	})
	if testCAErr != nil {
		t.Fatal(testCAErr)
	}
	return testCAVal
}

// nodeCertificate is a certificate of ca for node, as its agent has: for its client
// calls and for the server it runs.
func nodeCertificate(t testing.TB, ca *pki.CA, node string) tls.Certificate {
	t.Helper()
	kp, err := ca.Issue(pki.Request{CommonName: node, Organization: pki.OrgNodes, Client: true, Server: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// httpClientAs is a client trusting the test CA that presents a node's certificate (""
// for a user's call, which presents none).
func httpClientAs(t testing.TB, node string) *http.Client {
	t.Helper()
	ca := testCA(t)
	clientsMu.Lock()
	defer clientsMu.Unlock()
	if c, ok := clients[node]; ok {
		return c
	}
	var getCert func(*tls.CertificateRequestInfo) (*tls.Certificate, error)
	if node != "" {
		cert := nodeCertificate(t, ca, node)
		getCert = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	c := client.HTTPClient(roots, getCert)
	if node == "" { // a user's calls carry the test's management token
		c.Transport = &adminTransport{next: c.Transport}
	}
	clients[node] = c
	return c
}

// adminToken is the management token of the last test server; a user's calls send it
// unless they carry a token of their own, or ask to be anonymous (anonymousHeader).
var adminToken string

const anonymousHeader = "X-Test-Anonymous"

// anonymous, as callAs's token, calls without any token.
const anonymous = "<anonymous>"

type adminTransport struct{ next http.RoundTripper }

func (a *adminTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	switch {
	case r.Header.Get(anonymousHeader) != "":
		r.Header.Del(anonymousHeader)
	case r.Header.Get("Authorization") == "" && adminToken != "":
		r.Header.Set("Authorization", "Bearer "+adminToken)
	}
	return a.next.RoundTrip(r)
}

// newManagementToken stores a management token in st; "" when st cannot (a test of a
// closed store calls only the open routes).
func newManagementToken(t testing.TB, st *store.Store) string {
	t.Helper()
	sec, err := acl.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateACLToken(context.Background(), &acl.Token{ID: sec.ID, SecretHash: acl.HashOf(sec), Management: true, Name: "test admin", Created: time.Now()}); err != nil {
		t.Logf("no management token: %v", err)
		return ""
	}
	return sec.String()
}

func cmJSON(ns, name, content string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"configmap","metadata":{"name":%q,"namespace":%q},"datas":{"k":{"type":"file","content":%q}}}`,
		name, ns, content)
}

func procJSON(ns, name string, instances int) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":%q},"spec":{"instance":%d,"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web"}]}}}}`,
		name, ns, instances)
}

// controlledProcJSON is procJSON of a process the deployment web controls.
func controlledProcJSON(ns, name string, instances int) string {
	return strings.Replace(procJSON(ns, name, instances), `"namespace":"`+ns+`"`,
		`"namespace":"`+ns+`","annotations":{"berth.io/controlled-by":"deployment/web"}`, 1)
}

type response struct {
	code   int
	header http.Header
	body   []byte
}

func call(t *testing.T, method, url, body string) response {
	t.Helper()
	return callAs(t, "", method, url, body, "")
}

// callAs calls as node's agent ("" for a user), with a bearer token when given.
func callAs(t *testing.T, node, method, url, body, token string) response {
	t.Helper()
	return callWith(t, node, method, url, body, token, nil)
}

// callWith is callAs with more request headers.
func callWith(t *testing.T, node, method, url, body, token string, header http.Header) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	switch token {
	case "":
	case anonymous:
		req.Header.Set(anonymousHeader, "1")
	default:
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClientAs(t, node).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, b}
}

// wantStatus fails unless r has the status code; for errors it also checks the envelope.
func wantStatus(t *testing.T, r response, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("status %d, want %d; body %s", r.code, code, r.body)
	}
	if code >= 400 {
		e := decodeError(t, r)
		if e.Code != code || e.Reason != httpapi.Errorf(code, "").Reason || e.Message == "" {
			t.Fatalf("error envelope %+v for status %d", e, code)
		}
	}
}

func decodeError(t *testing.T, r response) httpapi.Error {
	t.Helper()
	var env struct {
		Error *httpapi.Error `json:"error"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil || env.Error == nil {
		t.Fatalf("not an error envelope: %s (%v)", r.body, err)
	}
	return *env.Error
}

// objectMeta decodes the metadata of an object answer.
func objectMeta(t *testing.T, body []byte) v4.ObjectMeta {
	t.Helper()
	var o struct {
		Kind     v4.Kind       `json:"kind"`
		Metadata v4.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(body, &o); err != nil {
		t.Fatalf("decode object %s: %v", body, err)
	}
	return o.Metadata
}

// verifyAsClient are the options that accept a client certificate of ca.
func verifyAsClient(ca *pki.CA) x509.VerifyOptions {
	return x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
}
