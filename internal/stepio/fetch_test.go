package stepio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestFetchHTTP(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/data", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "data %s", r.Header.Get("X-Token"))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { w.Write(bytes.Repeat([]byte("x"), 2000)) })
	mux.HandleFunc("/bigstream", func(w http.ResponseWriter, r *http.Request) {
		for range 20 {
			w.Write(bytes.Repeat([]byte("x"), 100))
			w.(http.Flusher).Flush() // no Content-Length: the bound applies while reading
		}
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	})
	mux.HandleFunc("/meta", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	mux.HandleFunc("/missing", http.NotFound)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()
	allowed := testPolicy("127.0.0.0/8")
	for _, tc := range []struct {
		name, path string
		policy     *Policy
		want, err  string
	}{
		{"fetched with headers", "/data", allowed, "data t0k", ""},
		{"loopback refused by default", "/data", testPolicy(), "", "refused"},
		{"over the bound", "/big", allowed, "", "more than 1000 bytes"},
		{"over the bound, streamed", "/bigstream", allowed, "", "more than 1000 bytes"},
		{"redirect loop", "/loop", allowed, "", "redirects"},
		{"redirect to a file", "/file", allowed, "", "only http and https"},
		{"redirect to the metadata endpoint", "/meta", allowed, "", "link-local"},
		{"not found", "/missing", allowed, "", "404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			h := &v4.WfHTTPArtifact{URL: srv.URL + tc.path, Headers: []v4.WfHTTPHeader{{Name: "X-Token", Value: "t0k"}}}
			err := tc.policy.FetchHTTP(ctx, h, &buf, 1000)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil || buf.String() != tc.want {
				t.Fatalf("got %q, %v; want %q", buf.String(), err, tc.want)
			}
		})
	}
	if err := allowed.FetchHTTP(ctx, &v4.WfHTTPArtifact{URL: "file:///etc/passwd"}, &bytes.Buffer{}, 10); err == nil {
		t.Error("file URL fetched")
	}
	if err := allowed.FetchHTTP(ctx, &v4.WfHTTPArtifact{URL: "gopher://x/"}, &bytes.Buffer{}, 10); errors.Is(err, nil) {
		t.Error("gopher URL fetched")
	}
}
