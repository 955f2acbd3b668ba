// Package ui is berth's web console: static files embedded in the binary and served by
// the API server at /ui/. The console is a client of the public API like the CLI: it
// holds the user's token in the browser tab (sessionStorage), sends it as a bearer token,
// and can do nothing the token's policies do not allow (docs/ui.md).
package ui

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var files embed.FS

// Prefix is where the console is served.
const Prefix = "/ui/"

// contentSecurityPolicy allows the console's own scripts only, so that nothing a workload
// or a user wrote (a name, a log line, an event message) can run as script even if a bug
// put it into the page as markup. Inline styles are allowed: the terminal sets them.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the console under Prefix: its files, and index.html for every other
// path (the console routes in the page).
func Handler() http.Handler {
	static, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	fileServer := http.FileServer(http.FS(static))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		name := strings.TrimPrefix(path.Clean("/"+strings.TrimPrefix(r.URL.Path, Prefix)), "/")
		if name == "" || name == "." {
			name = "index.html"
		}
		if _, err := fs.Stat(static, name); err != nil {
			name = "index.html"
		}
		if name == "index.html" {
			h.Set("Cache-Control", "no-cache")
		} else {
			h.Set("Cache-Control", "public, max-age=300")
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + name
		if name == "index.html" {
			// FileServer redirects /index.html to ./; serve the file's bytes directly.
			b, _ := fs.ReadFile(static, name)
			h.Set("Content-Type", "text/html; charset=utf-8")
			w.Write(b)
			return
		}
		fileServer.ServeHTTP(w, r2)
	})
}
