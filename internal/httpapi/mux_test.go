package httpapi

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/berthhq/berth/internal/store/storetest"
)

// Every route is registered with its access and passes the guard of it; the Mux
// remembers both, so a test can walk every route.
func TestMuxRegistersAccess(t *testing.T) {
	var guarded []string
	guard := func(pattern string, a Access, h HandlerFunc) HandlerFunc {
		guarded = append(guarded, pattern+" "+a.Guard)
		if a.Guard == GuardNode {
			return NodeAuth(h)
		}
		return h
	}
	m := NewMux(guard, Errors{Log: storetest.QuietLogger()})
	ok := func(w http.ResponseWriter, _ *http.Request) error { w.WriteHeader(http.StatusNoContent); return nil }
	m.Handle("GET /open", Open, ok)
	m.Handle("GET /node", NodeCert, ok)
	if want := []string{"GET /open open", "GET /node node"}; !slices.Equal(guarded, want) {
		t.Fatalf("guarded %v, want %v", guarded, want)
	}
	if a, found := m.Access("GET /node"); !found || a.Guard != GuardNode || !slices.Equal(m.Patterns(), []string{"GET /open", "GET /node"}) {
		t.Fatalf("access %+v %v, patterns %v", a, found, m.Patterns())
	}
	for path, code := range map[string]int{"/open": http.StatusNoContent, "/node": http.StatusUnauthorized} {
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != code {
			t.Errorf("GET %s without a certificate: %d, want %d", path, rec.Code, code)
		}
	}
}
