package server

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

// testStore is one embedded etcd for the package's tests; each test uses its own namespace.
var testStore *store.Store

func TestMain(m *testing.M) { os.Exit(storetest.Run(m, &testStore)) }

func quietLogger() *slog.Logger { return storetest.QuietLogger() }

// newTestServer serves a fresh Server over the shared store.
func newTestServer(t *testing.T, cfg Config) string {
	t.Helper()
	_, url := newTestServerOf(t, cfg)
	return url
}

// newTestServerOf is newTestServer that also returns the Server.
func newTestServerOf(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	storetest.Reset(t, testStore) // start clean, also under go test -count=N
	cfg.Logger = quietLogger()
	srv := New(cfg, testStore)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		srv.Close() // end watch streams, or ts.Close waits for them
		ts.Close()
	})
	return srv, ts.URL
}

func cmJSON(ns, name, content string) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"configmap","metadata":{"name":%q,"namespace":%q},"datas":{"k":{"type":"file","content":%q}}}`,
		name, ns, content)
}

func procJSON(ns, name string, instances int) string {
	return fmt.Sprintf(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":%q},"spec":{"instance":%d,"template":{"spec":{"processes":[{"procName":"web","startCmd":"./web"}]}}}}`,
		name, ns, instances)
}

type response struct {
	code   int
	header http.Header
	body   []byte
}

func call(t *testing.T, method, url, body string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
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
		if e.Code != code || e.Reason != reasons[code] || e.Message == "" {
			t.Fatalf("error envelope %+v for status %d", e, code)
		}
	}
}

func decodeError(t *testing.T, r response) apiError {
	t.Helper()
	var env struct {
		Error *apiError `json:"error"`
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
