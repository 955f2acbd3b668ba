package server

import (
	"net/http"
	"strings"
	"testing"
)

// An administrator reads the runtime profiles; an unknown profile is a 404.
func TestDebugProfiles(t *testing.T) {
	url := newTestServer(t, Config{})
	for _, c := range []struct {
		path, want string
		code       int
	}{
		{"/v1/debug/pprof/", "goroutine", http.StatusOK},
		{"/v1/debug/pprof/goroutine?debug=1", "goroutine profile:", http.StatusOK},
		{"/v1/debug/pprof/heap?debug=1", "heap profile:", http.StatusOK},
		{"/v1/debug/pprof/cmdline", "", http.StatusOK},
		{"/v1/debug/pprof/nothing", "Unknown profile", http.StatusNotFound},
	} {
		r := call(t, http.MethodGet, url+c.path, "")
		if r.code != c.code || !strings.Contains(string(r.body), c.want) {
			t.Errorf("GET %s: %d %.200s, want %d with %q", c.path, r.code, r.body, c.code, c.want)
		}
	}
}
