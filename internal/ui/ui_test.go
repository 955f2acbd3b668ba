package ui

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

// TestServesTheConsole: the page, its files with their types, the page again for any
// other path (the console routes itself), never a file outside the embedded tree; every
// answer carries the content security policy.
func TestServesTheConsole(t *testing.T) {
	cases := []struct {
		path, wantType, wantBody string
	}{
		{"/ui/", "text/html", `<script type="module" src="js/main.js">`},
		{"/ui/index.html", "text/html", "<title>berth</title>"},
		{"/ui/js/main.js", "text/javascript", "hashchange"},
		{"/ui/js/wfarchive.js", "text/javascript", "archivedworkflows"},
		{"/ui/app.css", "text/css", "--accent"},
		{"/ui/vendor/xterm.js", "text/javascript", "Terminal"},
		{"/ui/workloads", "text/html", "<title>berth</title>"},
		{"/ui/../../etc/passwd", "text/html", "<title>berth</title>"},
		{"/ui/js/../../../go.mod", "text/html", "<title>berth</title>"},
	}
	for _, c := range cases {
		rec := get(t, c.path)
		if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), c.wantType) || !strings.Contains(rec.Body.String(), c.wantBody) {
			t.Errorf("%s: %d %q, body has %q: %v", c.path, rec.Code, rec.Header().Get("Content-Type"), c.wantBody, strings.Contains(rec.Body.String(), c.wantBody))
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: headers %v", c.path, rec.Header())
		}
	}
}

// TestNoInlineScriptAndEveryImportExists: the policy forbids inline script, so the page
// has none; and every module the console imports, and every file the page links, is
// embedded (a typo would only show in a browser).
func TestNoInlineScriptAndEveryImportExists(t *testing.T) {
	static, err := fs.Sub(files, "static")
	if err != nil {
		t.Fatal(err)
	}
	index, err := fs.ReadFile(static, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(string(index), -1) {
		if !strings.Contains(tag, "src=") {
			t.Errorf("inline script: %s", tag)
		}
	}
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"#]+)"`).FindAllStringSubmatch(string(index), -1) {
		if _, err := fs.Stat(static, m[1]); err != nil {
			t.Errorf("index.html links %s: %v", m[1], err)
		}
	}
	if regexp.MustCompile(`\son[a-z]+=`).MatchString(string(index)) {
		t.Error("index.html has an inline event handler")
	}
	imports := regexp.MustCompile(`from '\./([a-z]+\.js)'`)
	js, err := fs.ReadDir(static, "js")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range js {
		src, err := fs.ReadFile(static, "js/"+e.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range imports.FindAllStringSubmatch(string(src), -1) {
			if _, err := fs.Stat(static, "js/"+m[1]); err != nil {
				t.Errorf("js/%s imports %s: %v", e.Name(), m[1], err)
			}
		}
		if strings.Contains(string(src), ".innerHTML") {
			t.Errorf("js/%s sets innerHTML: text must go in as text", e.Name())
		}
	}
}
