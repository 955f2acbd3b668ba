package cli

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeTree creates files (relative path -> content) under a new temp dir.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCollectFiles(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"b.yaml":        "b",
		"a.json":        "a",
		"c.YML":         "c",
		"notes.txt":     "x",
		".hidden.yaml":  "h",
		"sub/d.yaml":    "d",
		"sub/e.txt":     "e",
		".git/f.yaml":   "f",
		"sub/deep/g.js": "g",
	})
	rel := func(ps []string) []string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = strings.TrimPrefix(p, dir+string(filepath.Separator))
		}
		return out
	}
	tests := []struct {
		name      string
		paths     []string
		recursive bool
		want      []string
		wantErr   string
	}{
		{name: "dir sorted, not recursive", paths: []string{dir}, want: []string{"a.json", "b.yaml", "c.YML"}},
		{name: "dir recursive", paths: []string{dir}, recursive: true, want: []string{"a.json", "b.yaml", "c.YML", "sub/d.yaml"}},
		{name: "file of any extension", paths: []string{filepath.Join(dir, "notes.txt"), "-"}, want: []string{"notes.txt", "-"}},
		{name: "missing path", paths: []string{filepath.Join(dir, "nope.yaml")}, wantErr: "does not exist"},
		{name: "stdin twice", paths: []string{"-", "-"}, wantErr: "twice"},
		{name: "nothing", wantErr: "no input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := collectFiles(tt.paths, tt.recursive)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rel(got), tt.want) {
				t.Errorf("got %v, want %v", rel(got), tt.want)
			}
		})
	}
}

func TestSplitDocuments(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     []string
		wantJSON bool
	}{
		{name: "one json", in: " {\"a\": 1}\n", want: []string{`{"a": 1}`}, wantJSON: true},
		{name: "json stream", in: "{\"a\":1}\n{\"b\":2}", want: []string{`{"a":1}`, `{"b":2}`}, wantJSON: true},
		{name: "json array", in: "[{\"a\":1}, {\"b\":2}]", want: []string{`{"a":1}`, `{"b":2}`}, wantJSON: true},
		{name: "broken json is sent as yaml", in: "{\"a\":", want: []string{"{\"a\":"}},
		{name: "yaml one", in: "a: 1\n", want: []string{"a: 1\n"}},
		{
			name: "yaml stream with empty and comment-only documents",
			in:   "# header\n---\na: 1\n---\n\n---\n# only a comment\n---\nb: |\n  ---\n  text\n...\n--- c: 3\n",
			want: []string{"a: 1\n", "b: |\n  ---\n  text\n", "c: 3\n"},
		},
		{name: "crlf", in: "a: 1\r\n---\r\nb: 2\r\n", want: []string{"a: 1\r\n", "b: 2\r\n"}},
		{name: "directive", in: "%YAML 1.2\n---\na: 1\n", want: []string{"a: 1\n"}},
		{name: "empty", in: " \n\n", want: nil},
		{name: "---not a marker", in: "---x: 1\n", want: []string{"---x: 1\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, isJSON := splitDocuments([]byte(tt.in))
			var got []string
			for _, d := range docs {
				got = append(got, string(d))
			}
			if !reflect.DeepEqual(got, tt.want) || isJSON != tt.wantJSON {
				t.Errorf("got %q (json %v), want %q (json %v)", got, isJSON, tt.want, tt.wantJSON)
			}
		})
	}
}

func TestBuildStream(t *testing.T) {
	j1 := document{raw: []byte(`{"a":1}`), json: true}
	j2 := document{raw: []byte("{\"b\":2}\n"), json: true}
	y := document{raw: []byte("c: 3\n")}
	if got := string(buildStream([]document{j1, j2})); got != "{\"a\":1}\n{\"b\":2}\n" {
		t.Errorf("all JSON: %q", got)
	}
	if got := string(buildStream([]document{j1, y})); got != "---\n{\"a\":1}\n---\nc: 3\n" {
		t.Errorf("mixed: %q", got)
	}
}

func TestSplitSourcesEmpty(t *testing.T) {
	_, err := splitSources([]source{{name: "a.yaml", data: []byte("# nothing\n")}, {name: "b.json", data: nil}})
	if err == nil || !strings.Contains(err.Error(), "no objects found in a.yaml, b.json") {
		t.Fatalf("err = %v", err)
	}
	docs, err := splitSources([]source{{name: "a.yaml", data: []byte("x: 1\n---\ny: 2\n")}, {name: "b.json", data: []byte(`{"z":1}`)}})
	if err != nil {
		t.Fatal(err)
	}
	want := []document{
		{file: "a.yaml", index: 0, count: 2, raw: []byte("x: 1\n")},
		{file: "a.yaml", index: 1, count: 2, raw: []byte("y: 2\n")},
		{file: "b.json", index: 0, count: 1, raw: []byte(`{"z":1}`), json: true},
	}
	if !reflect.DeepEqual(docs, want) {
		t.Errorf("docs = %+v", docs)
	}
}
