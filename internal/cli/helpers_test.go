package cli

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testNow is the clock of every CLI test.
var testNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// fakeAPI answers "METHOD /path" (query ignored) with canned handlers and records the
// requests it gets.
type fakeAPI struct {
	mu       sync.Mutex
	routes   map[string]http.HandlerFunc
	requests []string // "METHOD /path?query"
	bodies   map[string][]byte
}

func newFakeAPI(t *testing.T) (*fakeAPI, string) {
	t.Helper()
	f := &fakeAPI{routes: map[string]http.HandlerFunc{}, bodies: map[string][]byte{}}
	srv := httptest.NewTLSServer(f)
	t.Cleanup(srv.Close)
	// Every httptest TLS server has the same certificate: the CLI trusts it as the
	// cluster's CA (runCLIEnv).
	fakeAPICert = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return f, srv.URL
}

// fakeAPICert is the fake APIs' certificate in PEM, once one was made.
var fakeAPICert []byte

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.Path
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	req := key
	if r.URL.RawQuery != "" {
		req += "?" + r.URL.RawQuery
	}
	f.requests = append(f.requests, req)
	f.bodies[key] = body
	h := f.routes[key]
	f.mu.Unlock()
	if h == nil {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"error":{"code":404,"reason":"NotFound","message":"%s not found"}}`, r.URL.Path)
		return
	}
	h(w, r)
}

// json registers a fixed JSON answer.
func (f *fakeAPI) json(route string, status int, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[route] = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// stream registers an NDJSON answer that ends after the lines, so a watching command
// returns (with the "server closed the stream" error).
func (f *fakeAPI) stream(route string, lines ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[route] = func(w http.ResponseWriter, _ *http.Request) {
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
}

func (f *fakeAPI) body(route string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return string(f.bodies[route])
}

func (f *fakeAPI) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = nil
}

func (f *fakeAPI) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

// result is what one CLI run printed.
type result struct {
	stdout, stderr string
	err            error
}

// runCLI runs berth with args against the server at url, with no environment but vars.
func runCLI(t *testing.T, url string, stdin string, args ...string) result {
	t.Helper()
	return runCLIEnv(t, map[string]string{"BERTH_SERVER": url}, stdin, args...)
}

// runCLIOK is runCLI for a run that must succeed: its error ends the test.
func runCLIOK(t *testing.T, url string, stdin string, args ...string) result {
	t.Helper()
	r := runCLI(t, url, stdin, args...)
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r
}

// wantContains fails the test for every one of wants that got (an output, a file) lacks,
// showing got.
func wantContains(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
}

func runCLIEnv(t *testing.T, vars map[string]string, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	home := t.TempDir()
	if _, ok := vars["BERTH_CA_CERT"]; !ok && fakeAPICert != nil {
		ca := filepath.Join(home, "ca.crt")
		if err := os.WriteFile(ca, fakeAPICert, 0o644); err != nil {
			t.Fatal(err)
		}
		vars = maps.Clone(vars)
		vars["BERTH_CA_CERT"] = ca
	}
	e := &env{
		getenv: func(k string) string { return vars[k] },
		home:   func() (string, error) { return home, nil },
		stdin:  strings.NewReader(stdin),
		stdout: &out,
		stderr: &errOut,
		now:    func() time.Time { return testNow },
	}
	cmd := newRootCommand(e)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return result{stdout: out.String(), stderr: errOut.String(), err: err}
}

// dedent strips the common leading tab indentation of a raw string literal and its first
// newline, so expected tables can be written inline.
func dedent(s string) string {
	s = strings.TrimPrefix(s, "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimLeft(l, "\t")
	}
	return strings.Join(lines, "\n")
}

// Short names for handler signatures in tests.
type (
	httpResponseWriter = http.ResponseWriter
	httpRequest        = http.Request
)
