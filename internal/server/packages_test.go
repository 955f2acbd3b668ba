package server

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// /packages/ never serves a file through a symlink that leaves the packages dir; links
// that stay inside are served (docs/operations.md).
func TestPackagesSymlinks(t *testing.T) {
	top := t.TempDir()
	dir := filepath.Join(top, "packages")
	outside := filepath.Join(top, "outside")
	for _, d := range []string{dir, outside, filepath.Join(dir, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, content string) {
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "app.tgz"), "package bytes")
	write(filepath.Join(outside, "secret.txt"), "secret")
	links := map[string]string{
		"same.tgz":       "app.tgz",
		"sub/up.tgz":     "../app.tgz",
		"passwd":         "/etc/passwd",
		"out.txt":        "../outside/secret.txt",
		"sub/out.txt":    "../../outside/secret.txt",
		"abs.tgz":        filepath.Join(dir, "app.tgz"), // absolute: os.Root refuses it
		"outdir":         "../outside",
		"sub/dangling":   "../nothing",
		"indir":          "sub",
		"loop":           "loop",
		"sub/outtop.txt": outside + "/secret.txt",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	url := newTestServer(t, Config{PackagesDir: dir})
	tests := []struct {
		path string
		code int
	}{
		{"/packages/app.tgz", http.StatusOK},
		{"/packages/same.tgz", http.StatusOK},
		{"/packages/sub/up.tgz", http.StatusOK},
		{"/packages/indir/up.tgz", http.StatusOK},
		{"/packages/passwd", http.StatusNotFound},
		{"/packages/out.txt", http.StatusNotFound},
		{"/packages/sub/out.txt", http.StatusNotFound},
		{"/packages/sub/outtop.txt", http.StatusNotFound},
		{"/packages/abs.tgz", http.StatusNotFound},
		{"/packages/outdir/secret.txt", http.StatusNotFound},
		{"/packages/sub/dangling", http.StatusNotFound},
		{"/packages/loop", http.StatusNotFound},
		{"/packages/indir", http.StatusNotFound},
		{"/packages/sub/", http.StatusNotFound},
		{"/packages/..%2foutside/secret.txt", http.StatusNotFound},
		{"/packages/%2e%2e/outside/secret.txt", http.StatusNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			r := call(t, http.MethodGet, url+tc.path, "")
			if r.code != tc.code {
				t.Fatalf("status %d, want %d; body %q", r.code, tc.code, r.body)
			}
			if tc.code == http.StatusOK && string(r.body) != "package bytes" {
				t.Fatalf("body %q", r.body)
			}
		})
	}
	// A packages dir that appears after the server started is served.
	late := filepath.Join(top, "late")
	url = newTestServer(t, Config{PackagesDir: late})
	if r := call(t, http.MethodGet, url+"/packages/app.tgz", ""); r.code != http.StatusNotFound {
		t.Fatalf("before the dir exists: %d", r.code)
	}
	if err := os.Mkdir(late, 0o755); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(late, "app.tgz"), "package bytes")
	if r := call(t, http.MethodGet, url+"/packages/app.tgz", ""); r.code != http.StatusOK {
		t.Fatalf("once the dir exists: %d", r.code)
	}
}
