package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// The CLI splits each file into its documents and checks their syntax itself, before
// anything is sent: apply joins every file into one stream (docs/cli.md), so an error the
// server found could only say where it is in that stream, not in which file, document
// and line the user has to fix. The rules are the server's (docs/api.md): JSON is strict
// (no trailing commas, no comments), YAML is YAML 1.2 with no key given twice.

// inputFormat is how a file is read.
type inputFormat int

const (
	// formatSniff decides from the content: JSON when it starts with '{' or '['.
	formatSniff inputFormat = iota
	formatJSON
	formatYAML
)

// formatOf reads a file's format from its extension; standard input and files of any
// other extension are sniffed.
func formatOf(name string) inputFormat {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json":
		return formatJSON
	case ".yaml", ".yml":
		return formatYAML
	}
	return formatSniff
}

// sniff tells JSON from YAML as the server does for a request body: the first byte that
// is not blank nor a byte-order mark is '{' or '['.
func sniff(data []byte) inputFormat {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return formatJSON
	}
	return formatYAML
}

// document is one object's document, with where it came from so errors about it name
// the file, the document and the line.
type document struct {
	file  string
	index int // position in its file, from 0
	count int // documents in its file
	line  int // first line of the document in its file, from 1
	raw   []byte
	json  bool
}

// where names the document for messages: the file, and with several documents in it
// which one and the line it starts on.
func (d document) where() string {
	if d.count > 1 {
		return fmt.Sprintf("%s (document %d, line %d)", d.file, d.index+1, d.line)
	}
	return d.file
}

// splitSource cuts one file into its documents, keeping each one's exact bytes (the
// server stores them as the object's definition), and checks their syntax. Empty YAML
// documents are dropped, so document i of the stream sent is known.
func splitSource(src source) ([]document, error) {
	format := src.format
	if format == formatSniff {
		format = sniff(src.data)
	}
	var docs []document
	var err error
	if format == formatJSON {
		docs, err = splitJSON(src.name, src.data)
	} else {
		docs, err = splitYAML(src.name, src.data)
	}
	if err != nil {
		return nil, err
	}
	for i := range docs {
		docs[i].index, docs[i].count = i, len(docs)
	}
	return docs, nil
}

// splitJSON splits JSON values one after another, and arrays into their items. A syntax
// error names the document (the value it is in) and its line and column in the file.
func splitJSON(name string, data []byte) ([]document, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var docs []document
	for {
		start := int(dec.InputOffset())
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, jsonError(name, len(docs)+1, data, err)
		}
		at := start + leading(data[start:], " \t\r\n")
		if raw[0] != '[' {
			docs = append(docs, document{file: name, line: lineAt(data, at), raw: raw, json: true})
			continue
		}
		items, offsets, err := arrayItems(raw)
		if err != nil {
			return nil, jsonError(name, len(docs)+1, data, err)
		}
		for i, it := range items {
			docs = append(docs, document{file: name, line: lineAt(data, at+offsets[i]), raw: it, json: true})
		}
	}
}

// arrayItems splits a valid JSON array into its items and their offsets in it.
func arrayItems(arr []byte) ([]json.RawMessage, []int, error) {
	dec := json.NewDecoder(bytes.NewReader(arr))
	if _, err := dec.Token(); err != nil { // '['
		return nil, nil, err
	}
	var items []json.RawMessage
	var offsets []int
	for dec.More() {
		off := int(dec.InputOffset())
		off += leading(arr[off:], " \t\r\n,")
		var it json.RawMessage
		if err := dec.Decode(&it); err != nil {
			return nil, nil, err
		}
		items, offsets = append(items, it), append(offsets, off)
	}
	return items, offsets, nil
}

// jsonError places a decoder error in the file: line and column of the offending
// character (a *json.SyntaxError's offset is just past it), or of the end of the input.
func jsonError(name string, doc int, data []byte, err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		line, col := position(data, int(se.Offset)-1)
		return fmt.Errorf("%s (document %d): invalid JSON at line %d, column %d: %s", name, doc, line, col, se)
	case errors.Is(err, io.ErrUnexpectedEOF):
		line, col := position(data, len(bytes.TrimRight(data, " \t\r\n")))
		return fmt.Errorf("%s (document %d): invalid JSON at line %d, column %d: unexpected end of input", name, doc, line, col)
	}
	return fmt.Errorf("%s (document %d): invalid JSON: %w", name, doc, err)
}

// position is the 1-based line and column (in characters) of byte offset off.
func position(data []byte, off int) (line, col int) {
	off = max(0, min(off, len(data)))
	before := data[:off]
	nl := bytes.LastIndexByte(before, '\n')
	return bytes.Count(before, []byte("\n")) + 1, utf8.RuneCount(before[nl+1:]) + 1
}

func lineAt(data []byte, off int) int {
	line, _ := position(data, off)
	return line
}

// leading counts the bytes at the start of b that are in set.
func leading(b []byte, set string) int {
	return len(b) - len(bytes.TrimLeft(b, set))
}

// splitYAML splits at document markers (`---` at the start of a line) and end markers
// (`...`), then parses each document. Markers inside block scalars are indented, so they
// are never mistaken.
func splitYAML(name string, data []byte) ([]document, error) {
	var docs []document
	var cur []byte
	first := 0 // line cur starts on
	flush := func() {
		if hasContent(cur) {
			docs = append(docs, document{file: name, line: first, raw: cur})
		}
		cur = nil
	}
	for i, l := range bytes.SplitAfter(data, []byte("\n")) {
		body := bytes.TrimRight(l, "\r\n")
		switch {
		case isMarker(body, "---"):
			flush()
			// Content after the marker ("--- {a: 1}") belongs to the new document.
			if rest := bytes.TrimSpace(body[3:]); len(rest) > 0 {
				cur, first = append(append(cur, rest...), '\n'), i+1
			}
		case isMarker(body, "..."):
			flush()
		default:
			if cur == nil {
				first = i + 1
			}
			cur = append(cur, l...)
		}
	}
	flush()
	for i, d := range docs {
		var v any
		if err := yaml.Unmarshal(d.raw, &v); err != nil {
			return nil, yamlError(name, i+1, d.line, err)
		}
	}
	return docs, nil
}

// yamlLine finds yaml.v3's line references ("line 3: ...", "already defined at line 2"),
// which count from the start of the document it was given.
var yamlLine = regexp.MustCompile(`\bline (\d+)`)

// yamlError rewrites a yaml.v3 error of a document that starts on line first so its line
// numbers are the file's. Errors yaml.v3 gives no line for are placed at the document's
// first line.
func yamlError(name string, doc, first int, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	shift := first - 1
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = strings.Join(te.Errors, "; ")
	} else if isParserProblem(msg) {
		shift++ // yaml.v3 numbers its parser's lines from 0, its scanner's from 1
	}
	msg = yamlLine.ReplaceAllStringFunc(msg, func(ref string) string {
		n, _ := strconv.Atoi(strings.TrimPrefix(ref, "line "))
		return "line " + strconv.Itoa(n+shift)
	})
	line := first
	if m := yamlLine.FindStringSubmatchIndex(msg); m != nil && m[0] == 0 {
		line, _ = strconv.Atoi(msg[m[2]:m[3]])
		msg = strings.TrimLeft(msg[m[1]:], ": ")
	}
	return fmt.Errorf("%s (document %d): invalid YAML at line %d: %s", name, doc, line, msg)
}

// parserProblems are the problems yaml.v3's parser (not its scanner) reports; the module
// is frozen at v3.0.1, so the list is too.
var parserProblems = []string{
	"did not find expected key", "did not find expected node content",
	"did not find expected '-' indicator", "did not find expected ',' or ",
	"did not find expected <document start>", "did not find expected <stream-start>",
	"found duplicate %TAG directive", "found duplicate %YAML directive",
	"found incompatible YAML document", "found undefined tag handle",
}

// isParserProblem reports whether a yaml.v3 message ("line 3: did not find expected
// key") comes from its parser.
func isParserProblem(msg string) bool {
	if m := yamlLine.FindStringIndex(msg); m != nil && m[0] == 0 {
		msg = strings.TrimLeft(msg[m[1]:], ": ")
	}
	for _, p := range parserProblems {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
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
