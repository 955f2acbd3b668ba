package cli

import (
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
	r := runCLI(t, url, "", "apply", "-f", dir)
	if r.err != nil {
		t.Fatal(r.err)
	}
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
		"  - " + filepath.Join(dir, "app.yaml") + " (document 2): datas: required\n" +
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
			api, url := newFakeAPI(t)
			r := runCLI(t, url, tt.stdin, tt.args...)
			if r.err == nil || !strings.Contains(r.err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", r.err, tt.want)
			}
			if n := len(api.got()); n != 0 {
				t.Errorf("%d requests sent on a client-side error", n)
			}
		})
	}
}
