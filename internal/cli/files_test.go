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

func TestSplitSource(t *testing.T) {
	tests := []struct {
		name      string
		format    inputFormat
		in        string
		want      []string
		wantLines []int
		wantJSON  bool
	}{
		{name: "one json", in: " {\"a\": 1}\n", want: []string{`{"a": 1}`}, wantLines: []int{1}, wantJSON: true},
		{name: "json stream", in: "{\"a\":1}\n\n{\"b\":2}", want: []string{`{"a":1}`, `{"b":2}`}, wantLines: []int{1, 3}, wantJSON: true},
		{name: "json array", in: "[{\"a\":1},\n {\"b\":2}]", want: []string{`{"a":1}`, `{"b":2}`}, wantLines: []int{1, 2}, wantJSON: true},
		{name: "json by extension", format: formatJSON, in: "\n{\"a\":1}", want: []string{`{"a":1}`}, wantLines: []int{2}, wantJSON: true},
		{name: "yaml flow mapping by extension", format: formatYAML, in: "{a: 1}\n", want: []string{"{a: 1}\n"}, wantLines: []int{1}},
		{name: "yaml one", in: "a: 1\n", want: []string{"a: 1\n"}, wantLines: []int{1}},
		{
			name:      "yaml stream with empty and comment-only documents",
			in:        "# header\n---\na: 1\n---\n\n---\n# only a comment\n---\nb: |\n  ---\n  text\n...\n--- c: 3\n",
			want:      []string{"a: 1\n", "b: |\n  ---\n  text\n", "c: 3\n"},
			wantLines: []int{3, 9, 13},
		},
		{name: "crlf", in: "a: 1\r\n---\r\nb: 2\r\n", want: []string{"a: 1\r\n", "b: 2\r\n"}, wantLines: []int{1, 3}},
		{name: "directive", in: "%YAML 1.2\n---\na: 1\n", want: []string{"a: 1\n"}, wantLines: []int{3}},
		{name: "empty", in: " \n\n", want: nil},
		{name: "---not a marker", in: "---x: 1\n", want: []string{"---x: 1\n"}, wantLines: []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := splitSource(source{name: "f", data: []byte(tt.in), format: tt.format})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			var lines []int
			for i, d := range docs {
				got, lines = append(got, string(d.raw)), append(lines, d.line)
				if d.json != tt.wantJSON || d.index != i || d.count != len(docs) || d.file != "f" {
					t.Errorf("document %d: %+v", i, d)
				}
			}
			if !reflect.DeepEqual(got, tt.want) || !reflect.DeepEqual(lines, tt.wantLines) {
				t.Errorf("got %q on lines %v, want %q on lines %v", got, lines, tt.want, tt.wantLines)
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

func TestReadDocuments(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"a.yaml":  "# nothing\n",
		"b.json":  "",
		"c.yaml":  "x: 1\n---\ny: 2\n",
		"d.json":  `{"z":1}`,
		"e.yml":   "{z: 1,}\n", // YAML allows the trailing comma JSON refuses
		"f.txt":   " [{\"z\":1}]",
		"big.yml": "a: " + strings.Repeat("x", 100) + "\n",
	})
	at := func(name string) string { return filepath.Join(dir, name) }
	_, err := readDocuments([]string{at("a.yaml"), at("b.json"), "-"}, strings.NewReader(""), 1000, false)
	if want := "no objects found in " + at("a.yaml") + ", " + at("b.json") + ", <stdin>"; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
	docs, err := readDocuments([]string{at("c.yaml"), at("d.json"), at("e.yml"), at("f.txt")}, nil, 1000, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []document{
		{file: at("c.yaml"), index: 0, count: 2, line: 1, raw: []byte("x: 1\n")},
		{file: at("c.yaml"), index: 1, count: 2, line: 3, raw: []byte("y: 2\n")},
		{file: at("d.json"), index: 0, count: 1, line: 1, raw: []byte(`{"z":1}`), json: true},
		{file: at("e.yml"), index: 0, count: 1, line: 1, raw: []byte("{z: 1,}\n")},
		{file: at("f.txt"), index: 0, count: 1, line: 1, raw: []byte(`{"z":1}`), json: true},
	}
	if !reflect.DeepEqual(docs, want) {
		t.Errorf("docs = %+v", docs)
	}
	// Each file fits the limit, but not together, and only apply sends them together.
	files := []string{at("big.yml"), at("big.yml")}
	if _, err := readDocuments(files, nil, 150, true); err == nil || !strings.Contains(err.Error(), "add up to more than") {
		t.Errorf("apply of files over the limit together: %v", err)
	}
	if _, err := readDocuments(files, nil, 150, false); err != nil {
		t.Errorf("delete of files over the limit together: %v", err)
	}
}
