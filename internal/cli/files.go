package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// stdinName names standard input in messages.
const stdinName = "<stdin>"

// manifestExts are the files a directory contributes to apply and delete -f.
var manifestExts = map[string]bool{".json": true, ".yaml": true, ".yml": true}

// collectFiles expands -f arguments: a file as is, a directory into its *.json, *.yaml and
// *.yml files sorted by name (descending into subdirectories only with recursive), and
// "-" for standard input. Hidden entries (".git", editor files) are skipped inside
// directories. A path that does not exist is an error.
func collectFiles(paths []string, recursive bool) ([]string, error) {
	if len(paths) == 0 {
		return nil, errors.New("no input: give -f FILE, DIR or - (standard input)")
	}
	var out []string
	stdin := false
	for _, p := range paths {
		if p == "-" {
			if stdin {
				return nil, errors.New("-f - (standard input) given twice")
			}
			stdin = true
			out = append(out, p)
			continue
		}
		info, err := os.Stat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("path %s does not exist", p)
			}
			return nil, err
		}
		if !info.IsDir() {
			out = append(out, p)
			continue
		}
		files, err := dirFiles(p, recursive)
		if err != nil {
			return nil, err
		}
		out = append(out, files...)
	}
	return out, nil
}

// dirFiles lists the manifests of dir in lexical order (WalkDir's order).
func dirFiles(dir string, recursive bool) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == dir {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		if manifestExts[strings.ToLower(filepath.Ext(path))] {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read directory %s: %w", dir, err)
	}
	return out, nil
}

// source is one input file and its content.
type source struct {
	name string
	data []byte
}

// readSources reads every file collectFiles names ("-" from stdin).
func readSources(files []string, stdin io.Reader) ([]source, error) {
	out := make([]source, 0, len(files))
	for _, f := range files {
		var data []byte
		var err error
		name := f
		if f == "-" {
			name = stdinName
			data, err = io.ReadAll(stdin)
		} else {
			data, err = os.ReadFile(f)
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		out = append(out, source{name: name, data: data})
	}
	return out, nil
}

// document is one object's document, with where it came from so server errors about it
// can name the file.
type document struct {
	file  string
	index int // position in its file, from 0
	count int // documents in its file
	raw   []byte
	json  bool
}

// splitSources cuts every source into documents, in order. Empty input is an error.
func splitSources(srcs []source) ([]document, error) {
	var docs []document
	for _, s := range srcs {
		raws, isJSON := splitDocuments(s.data)
		for i, r := range raws {
			docs = append(docs, document{file: s.name, index: i, count: len(raws), raw: r, json: isJSON})
		}
	}
	if len(docs) == 0 {
		names := make([]string, len(srcs))
		for i, s := range srcs {
			names[i] = s.name
		}
		if len(names) == 0 {
			return nil, errors.New("no objects found: no .json, .yaml or .yml files")
		}
		return nil, fmt.Errorf("no objects found in %s", strings.Join(names, ", "))
	}
	return docs, nil
}

// splitDocuments cuts a file into its documents, keeping each one's exact bytes (the
// server stores them as the object's definition). JSON input (objects one after another,
// or an array of objects) splits into its values; anything else is YAML, split at `---`
// lines. Empty documents are dropped, so document i of the stream sent is known.
func splitDocuments(data []byte) (docs [][]byte, isJSON bool) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, false
	}
	if trimmed[0] == '{' || trimmed[0] == '[' {
		if docs, ok := splitJSON(trimmed); ok {
			return docs, true
		}
		// Not valid JSON: send it as YAML (flow style) and let the server say what is wrong.
	}
	return splitYAML(data), false
}

func splitJSON(data []byte) ([][]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var docs [][]byte
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return docs, true
		}
		if err != nil {
			return nil, false
		}
		if raw[0] != '[' {
			docs = append(docs, raw)
			continue
		}
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, false
		}
		for _, it := range items {
			docs = append(docs, it)
		}
	}
}

// splitYAML splits at document markers (`---` at the start of a line) and end markers
// (`...`). Markers inside block scalars are indented, so they are never mistaken.
func splitYAML(data []byte) [][]byte {
	var docs [][]byte
	var cur []byte
	flush := func() {
		if hasContent(cur) {
			docs = append(docs, cur)
		}
		cur = nil
	}
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		body := bytes.TrimRight(line, "\r\n")
		switch {
		case isMarker(body, "---"):
			flush()
			// Content after the marker ("--- {a: 1}") belongs to the new document.
			if rest := bytes.TrimSpace(body[3:]); len(rest) > 0 {
				cur = append(cur, rest...)
				cur = append(cur, '\n')
			}
		case isMarker(body, "..."):
			flush()
		default:
			cur = append(cur, line...)
		}
	}
	flush()
	return docs
}

func isMarker(line []byte, marker string) bool {
	if !bytes.HasPrefix(line, []byte(marker)) {
		return false
	}
	rest := line[len(marker):]
	return len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t'
}

// hasContent reports whether a YAML document holds more than blank lines, comments and
// directives.
func hasContent(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		l := bytes.TrimSpace(line)
		if len(l) > 0 && l[0] != '#' && l[0] != '%' {
			return true
		}
	}
	return false
}

// buildStream joins documents into one apply body. When every document is JSON the body
// is a JSON stream; otherwise it is a YAML stream with every document after a `---`
// line (JSON is valid YAML), so the server sees exactly len(docs) documents.
func buildStream(docs []document) []byte {
	allJSON := true
	for _, d := range docs {
		allJSON = allJSON && d.json
	}
	var b bytes.Buffer
	for _, d := range docs {
		if !allJSON {
			b.WriteString("---\n")
		}
		b.Write(d.raw)
		if !bytes.HasSuffix(d.raw, []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}
