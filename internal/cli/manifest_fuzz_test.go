package cli

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzSplitSource: whatever a file holds, splitting it into documents never panics,
// every document is a piece of the file with a line inside it, and an error names the
// file.
func FuzzSplitSource(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"configmap","metadata":{"name":"a"}}`,
		`[{"kind":"configmap"},{"kind":"secret"}]` + "\n" + `{"kind":"process"}`,
		`{"a":1,}`,
		"kind: configmap\nmetadata: {name: a}\n---\nkind: secret\n",
		"---\n\n---\nkind: x\nkind: y\n",
		"a:\n\tb: 1\n",
		"\ufeff{\"k\":\"v\"}",
		"[1, 2,",
	} {
		for _, ext := range []string{".json", ".yaml", ""} {
			f.Add(seed, ext)
		}
	}
	f.Fuzz(func(t *testing.T, data, ext string) {
		name := "input" + ext
		docs, err := splitSource(source{name: name, format: formatOf(name), data: []byte(data)})
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		lines := strings.Count(data, "\n") + 1
		for i, d := range docs {
			if d.index != i || d.count != len(docs) || d.line < 1 || d.line > lines {
				t.Fatalf("document %d: index %d of %d, line %d of %d", i, d.index, d.count, d.line, lines)
			}
			if !d.json && !bytes.Contains([]byte(data), d.raw) {
				t.Fatalf("document %d is not a piece of the file: %q", i, d.raw)
			}
		}
	})
}
