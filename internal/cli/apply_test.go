package cli

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const applyOK = `{"results":[
	{"kind":"process","namespace":"defaultGroup","name":"gamesvc","action":"created","resourceVersion":"17"},
	{"kind":"configmap","namespace":"ns-a","name":"cfg","action":"unchanged","resourceVersion":"12"},
	{"kind":"service","namespace":"ns-a","name":"web","action":"updated","resourceVersion":"18"}]}`

func TestApplySendsOneStreamAndPrintsResults(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"a.json":     `{"kind":"process","metadata":{"name":"gamesvc"}}`,
		"b.yaml":     "kind: configmap\nmetadata: {name: cfg, namespace: ns-a}\n---\nkind: service\nmetadata: {name: web, namespace: ns-a}\n",
		"readme.txt": "not sent",
	})
	api, url := newFakeAPI(t)
	api.json("POST /v1/apply", 200, applyOK)
	r := runCLIOK(t, url, "", "apply", "-f", dir)
	wantBody := "---\n{\"kind\":\"process\",\"metadata\":{\"name\":\"gamesvc\"}}\n" +
		"---\nkind: configmap\nmetadata: {name: cfg, namespace: ns-a}\n" +
		"---\nkind: service\nmetadata: {name: web, namespace: ns-a}\n"
	if got := api.body("POST /v1/apply"); got != wantBody {
		t.Errorf("body =\n%s\nwant\n%s", got, wantBody)
	}
	wantOut := "process/gamesvc created\nconfigmap ns-a/cfg unchanged\nservice ns-a/web updated\n"
	if r.stdout != wantOut {
		t.Errorf("stdout =\n%s\nwant\n%s", r.stdout, wantOut)
	}
	if n := len(api.got()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestApplyOutputFormats(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("POST /v1/apply", 200, applyOK)
	tests := []struct {
		output string
		want   string
	}{
		{"name", "process/gamesvc\nconfigmap/cfg\nservice/web\n"},
		{"json", `"action": "unchanged"`},
		{"yaml", "results:\n  - kind: process\n    namespace: defaultGroup\n"},
	}
	for _, tt := range tests {
		r := runCLI(t, url, `{"kind":"process"}`, "apply", "-f", "-", "-o", tt.output)
		if r.err != nil || !strings.Contains(r.stdout, tt.want) {
			t.Errorf("-o %s: %v\n%s", tt.output, r.err, r.stdout)
		}
	}
	if got := api.body("POST /v1/apply"); got != "{\"kind\":\"process\"}\n" {
		t.Errorf("stdin body = %q", got)
	}
}

func TestApplyInvalidNamesFiles(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"app.yaml": "kind: process\n---\nkind: configmap\n",
		"svc.json": `{"kind":"service"}`,
	})
	api, url := newFakeAPI(t)
	api.json("POST /v1/apply", 422, `{"error":{"code":422,"reason":"Invalid","message":"2 of 3 documents are invalid: 3 problems",
		"details":[
			{"field":"documents[1].datas","message":"required"},
			{"field":"documents[2].spec.ports[0].name","message":"must be unique"},
			{"field":"","message":"something general"}]}}`)
	r := runCLI(t, url, "", "apply", "-f", dir)
	if r.err == nil {
		t.Fatal("no error on 422")
	}
	want := "nothing was applied: 2 of 3 documents are invalid: 3 problems\n" +
		"  - " + filepath.Join(dir, "app.yaml") + " (document 2, line 3): datas: required\n" +
		"  - " + filepath.Join(dir, "svc.json") + ": spec.ports[0].name: must be unique\n" +
		"  - something general"
	if r.err.Error() != want {
		t.Errorf("error =\n%s\nwant\n%s", r.err, want)
	}
	if r.stdout != "" {
		t.Errorf("stdout = %q", r.stdout)
	}
}

func TestApplySingleDocumentError(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("POST /v1/apply", 422, `{"error":{"code":422,"reason":"Invalid","message":"process defaultGroup/x is invalid",
		"details":[{"field":"spec.instance","message":"must be greater than 0"}]}}`)
	r := runCLI(t, url, "kind: process\n", "apply", "-f", "-")
	want := "nothing was applied: process defaultGroup/x is invalid\n  - <stdin>: spec.instance: must be greater than 0"
	if r.err == nil || r.err.Error() != want {
		t.Errorf("error =\n%v\nwant\n%s", r.err, want)
	}
}

func TestApplyClientSideErrors(t *testing.T) {
	dir := writeTree(t, map[string]string{"empty.yaml": "# nothing here\n"})
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"missing path", "", []string{"apply", "-f", filepath.Join(dir, "nope")}, "does not exist"},
		{"empty file", "", []string{"apply", "-f", filepath.Join(dir, "empty.yaml")}, "no objects found"},
		{"empty stdin", "", []string{"apply", "-f", "-"}, "no objects found in <stdin>"},
		{"no -f", "", []string{"apply"}, "no input"},
		{"namespace flag", "a: 1", []string{"apply", "-n", "x", "-f", "-"}, "-n is not used"},
		{"bad output", "a: 1", []string{"apply", "-o", "wide", "-f", "-"}, "unknown output format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := runRefusedLocally(t, tt.stdin, tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestApplyFileErrors checks what apply refuses before sending anything: every syntax
// error names the file, the document and the line (docs/cli.md), a .json file is strict
// JSON, and a file over the server's body limit is refused from its size, unread.
func TestApplyFileErrors(t *testing.T) {
	cm := func(name string) string {
		return "kind: configmap\nmetadata:\n  name: " + name + "\ndatas: {k: {type: file, content: eA==}}\n"
	}
	dir := writeTree(t, map[string]string{
		"comma.json":  "{\"kind\": \"configmap\",\n \"metadata\": {\"name\": \"a\"},\n}\n",
		"second.json": "{\"kind\": \"configmap\"}\n[{\"kind\": \"secret\"},\n {\"kind\": \"configmap\"},\n]\n",
		"short.json":  "{\"kind\": \"configmap\",\n  \"metadata\": {",
		"yaml.json":   "kind: configmap\n",
		"bad.yaml":    cm("a") + "---\nkind: configmap\nmetadata:\n  name: b\n bad: indent\n",
		"flow.yaml":   cm("a") + "---\nkind: configmap\nmetadata: {name: b\n",
		"colon.yaml":  cm("a") + "---\nkind: configmap\nmetadata:\n  name: b: c\n",
		"dup.yml":     "# header\n---\n" + cm("a") + "---\nkind: configmap\nmetadata:\n  name: b\n  name: c\n",
		"tab.yaml":    "kind: configmap\n\tmetadata: {}\n",
		"dir/a.yaml":  cm("a"),
		"dir/b.json":  `{"kind": "configmap",}`,
	})
	at := func(name string) string { return filepath.Join(dir, name) }
	// A sparse file one byte over the limit: its size is known without writing 2 MiB.
	big := at("big.yaml")
	if err := os.WriteFile(big, []byte(cm("big")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, maxRequestBytes+1); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		stdin string
		file  string
		want  string
	}{
		{name: "trailing comma in a .json file", file: at("comma.json"),
			want: at("comma.json") + " (document 1): invalid JSON at line 3, column 1: invalid character '}' looking for beginning of object key string"},
		{name: "trailing comma in an array of a JSON stream", file: at("second.json"),
			want: at("second.json") + " (document 2): invalid JSON at line 4, column 1: invalid character ']' looking for beginning of value"},
		{name: "truncated JSON", file: at("short.json"),
			want: at("short.json") + " (document 1): invalid JSON at line 2, column 16: unexpected end of input"},
		{name: "YAML in a .json file", file: at("yaml.json"),
			want: at("yaml.json") + " (document 1): invalid JSON at line 1, column 1: invalid character 'k' looking for beginning of value"},
		{name: "bad second YAML document", file: at("bad.yaml"),
			want: at("bad.yaml") + " (document 2): invalid YAML at line 9: did not find expected key"},
		{name: "unclosed flow mapping", file: at("flow.yaml"),
			want: at("flow.yaml") + " (document 2): invalid YAML at line 7: did not find expected ',' or '}'"},
		{name: "colon in a value", file: at("colon.yaml"),
			want: at("colon.yaml") + " (document 2): invalid YAML at line 8: mapping values are not allowed in this context"},
		{name: "key twice in a YAML document", file: at("dup.yml"),
			want: at("dup.yml") + " (document 2): invalid YAML at line 11: mapping key \"name\" already defined at line 10"},
		{name: "tab in YAML", file: at("tab.yaml"),
			want: at("tab.yaml") + " (document 1): invalid YAML at line 2: found a tab character that violates indentation"},
		{name: "stdin sniffed as JSON", stdin: "\n  {\"kind\": \"configmap\",}", file: "-",
			want: "<stdin> (document 1): invalid JSON at line 2, column 24: invalid character '}' looking for beginning of object key string"},
		{name: "stdin sniffed as YAML", stdin: cm("a") + "---\n" + cm("b") + "  x: [1\n", file: "-",
			want: "<stdin> (document 2): invalid YAML at line"},
		{name: "file in a directory", file: at("dir"),
			want: at("dir/b.json") + " (document 1): invalid JSON at line 1, column 22: invalid character '}' looking for beginning of object key string"},
		{name: "file over the limit", file: big,
			want: big + " is 2097153 bytes, over the server's limit of 2097152 bytes per request: split it into smaller files"},
		{name: "stdin over the limit", stdin: strings.Repeat("#", maxRequestBytes+1), file: "-",
			want: "<stdin> is over the server's limit of 2.0 MiB per request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := runRefusedLocally(t, tt.stdin, "apply", "-f", tt.file); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err =\n%v\nwant\n%s", err, tt.want)
			}
		})
	}
}

// TestApplyFilesOverTheLimitTogether: files that fit one by one but not in one request,
// for apply and plan, which both send every document in one body.
func TestApplyFilesOverTheLimitTogether(t *testing.T) {
	half := "kind: configmap\nmetadata: {name: x}\n# " + strings.Repeat("x", maxRequestBytes/2) + "\n"
	dir := writeTree(t, map[string]string{"a.yaml": half, "b.yaml": half})
	for _, command := range []string{"apply", "plan"} {
		t.Run(command, func(t *testing.T) {
			want := "the documents of the files up to " + filepath.Join(dir, "b.yaml") + " add up to more than the server's limit of 2.0 MiB per request"
			if err := runRefusedLocally(t, "", command, "-f", dir); err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("err = %v, want %s", err, want)
			}
		})
	}
}

// The server's warnings are printed on standard error, the results as always.
func TestApplyPrintsWarnings(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.json": `{"kind":"process","metadata":{"name":"gamesvc"}}`})
	api, url := newFakeAPI(t)
	api.routes["POST /v1/apply"] = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Add("Warning", `299 berth "updatePolicy is ignored by berth (BCS parsed it and never used it)"`)
		w.Header().Add("Warning", `299 berth "spec.x is \u00e9t\u00e9"`)
		io.WriteString(w, `{"results":[{"kind":"process","namespace":"defaultGroup","name":"gamesvc","action":"created","resourceVersion":"17"}]}`)
	}
	r := runCLIOK(t, url, "", "apply", "-f", dir)
	want := "warning: updatePolicy is ignored by berth (BCS parsed it and never used it)\nwarning: spec.x is été\n"
	if r.stderr != want {
		t.Errorf("stderr =\n%s\nwant\n%s", r.stderr, want)
	}
	if r.stdout != "process/gamesvc created\n" {
		t.Errorf("stdout = %q", r.stdout)
	}
}

// runRefusedLocally runs berth against a fake API and returns its error, failing the test
// if the command sent any request: for the errors the CLI finds before calling a server.
func runRefusedLocally(t *testing.T, stdin string, args ...string) error {
	t.Helper()
	api, url := newFakeAPI(t)
	r := runCLI(t, url, stdin, args...)
	if n := len(api.got()); n != 0 {
		t.Errorf("%d requests sent on a client-side error", n)
	}
	return r.err
}

// --validate=strict asks the server for a strict read (?validate=strict), on apply and
// plan; the default sends no parameter; a bad value is refused before any request.
func TestApplyValidateFlag(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("POST /v1/apply", 200, applyOK)
	api.json("POST /v1/plan", 200, `{"results":[]}`)
	doc := `{"kind":"process","metadata":{"name":"gamesvc"}}`
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"apply", "-f", "-"}, "POST /v1/apply"},
		{[]string{"apply", "-f", "-", "--validate=warn"}, "POST /v1/apply"},
		{[]string{"apply", "-f", "-", "--validate=strict"}, "POST /v1/apply?validate=strict"},
		{[]string{"plan", "-f", "-", "--validate", "strict"}, "POST /v1/plan?validate=strict"},
	} {
		api.reset()
		runCLIOK(t, url, doc, tc.args...)
		if got := api.got(); len(got) != 1 || got[0] != tc.want {
			t.Errorf("%q sent %q, want %q", tc.args, got, tc.want)
		}
	}
	for _, cmd := range []string{"apply", "plan"} {
		err := runRefusedLocally(t, doc, cmd, "-f", "-", "--validate=yes")
		if err == nil || !strings.Contains(err.Error(), `--validate="yes": must be "strict" or "warn"`) {
			t.Errorf("%s --validate=yes: %v", cmd, err)
		}
	}
}
