package v4

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// rawDocument is one document of an input stream, not yet typed: value is built from
// map[string]any, []any, string, json.Number, bool and nil.
type rawDocument struct {
	value any
	raw   []byte
}

// maxDocuments bounds how many documents one stream may hold, and maxNodes how many
// values one YAML document may expand to (aliases can multiply them).
const (
	maxDocuments = 1000
	maxNodes     = 200000
)

// splitStream cuts data into documents. Input starting with '{' or '[' is JSON (objects one
// after another, or one array of objects); anything else is YAML, documents separated by
// "---" lines. Empty documents are skipped. A strict parse refuses a JSON key given twice
// in one object (a *duplicateKeyError, returned with the documents); otherwise such
// objects keep their keys in order (members.go).
func splitStream(data []byte, mode Validation) ([]rawDocument, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) == 0 {
		return nil, errors.New("no document in input")
	}
	if trimmed[0] == '{' || trimmed[0] == '[' {
		return splitJSON(data, mode)
	}
	return splitYAML(data)
}

func splitJSON(data []byte, mode Validation) ([]rawDocument, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var docs []rawDocument
	var values []jsonValue
	for {
		start := dec.InputOffset()
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, jsonSyntaxError(data, err)
		}
		raw := bytes.TrimSpace(data[start:dec.InputOffset()])
		arr, isArray := v.([]any)
		values = append(values, jsonValue{start: start, end: dec.InputOffset(), first: len(docs), array: isArray})
		if isArray {
			for _, el := range arr {
				b, _ := json.Marshal(el) // re-encoding a decoded value cannot fail
				docs = append(docs, rawDocument{value: el, raw: b})
			}
		} else {
			docs = append(docs, rawDocument{value: v, raw: append([]byte(nil), raw...)})
		}
		if len(docs) > maxDocuments {
			return nil, fmt.Errorf("more than %d documents in one input", maxDocuments)
		}
	}
	if len(docs) == 0 {
		return nil, errors.New("no document in input")
	}
	if mode == ValidateStrict {
		// The documents go along with a duplicate, read as the default mode reads them,
		// so that the one answer also lists their other problems.
		err := checkStreamKeys(data, values, len(docs) > 1)
		if _, dup := errors.AsType[*duplicateKeyError](err); !dup {
			return docs, err
		}
		if oerr := orderStreamValues(data, values, docs); oerr != nil {
			return nil, oerr
		}
		return docs, err
	}
	if err := orderStreamValues(data, values, docs); err != nil {
		return nil, err
	}
	return docs, nil
}

// orderStreamValues decodes again, token by token, the values whose objects may hold a
// key twice (in any case), so that those objects keep their keys in document order
// (members.go). The text decoded once already, so an error here is unexpected.
func orderStreamValues(data []byte, values []jsonValue, docs []rawDocument) error {
	for _, v := range values {
		if surelyNoKeyTwice(data[v.start:v.end], true) {
			continue
		}
		ordered, err := orderedValue(data[v.start:v.end])
		if err != nil {
			return jsonSyntaxError(data, err)
		}
		if !v.array {
			docs[v.first].value = ordered
			continue
		}
		for i, el := range ordered.([]any) {
			// The element's text again, its keys as given: encoding/json's kept only
			// the last of a key given twice.
			docs[v.first+i].value, docs[v.first+i].raw = el, appendJSON(nil, el)
		}
	}
	return nil
}

// jsonSyntaxError turns a decoder error into one that names the line and column.
func jsonSyntaxError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// Offset counts the bytes read, the offending one included.
		line, col := lineCol(data, max(se.Offset-1, 0))
		return fmt.Errorf("invalid JSON at line %d, column %d: %v", line, col, err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("invalid JSON: unexpected end of input")
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

func lineCol(data []byte, offset int64) (int, int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	before := data[:offset]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(offset) - bytes.LastIndexByte(before, '\n')
	return line, col
}

func splitYAML(data []byte) ([]rawDocument, error) {
	var docs []rawDocument
	for i, chunk := range yamlChunks(data) {
		var node yaml.Node
		if err := yaml.Unmarshal(chunk.text, &node); err != nil {
			return nil, fmt.Errorf("invalid YAML in document %d (line %d): %v", i+1, chunk.line, err)
		}
		if node.Kind == 0 || (node.Kind == yaml.DocumentNode && len(node.Content) == 0) {
			continue // comments or blank only
		}
		budget := maxNodes
		v, err := yamlValue(&node, &budget)
		if err != nil {
			return nil, fmt.Errorf("invalid YAML in document %d (line %d): %v", i+1, chunk.line, err)
		}
		if v == nil {
			continue
		}
		docs = append(docs, rawDocument{value: v, raw: chunk.text})
		if len(docs) > maxDocuments {
			return nil, fmt.Errorf("more than %d documents in one input", maxDocuments)
		}
	}
	if len(docs) == 0 {
		return nil, errors.New("no document in input")
	}
	return docs, nil
}

type yamlChunk struct {
	text []byte
	line int // first line of the chunk, 1-based
}

// yamlChunks splits on document markers ("---" and "..." at the start of a line), keeping
// each document's own text so it can be stored as submitted.
func yamlChunks(data []byte) []yamlChunk {
	var chunks []yamlChunk
	lines := bytes.SplitAfter(data, []byte("\n"))
	var cur []byte
	start := 1
	for i, l := range lines {
		t := strings.TrimRight(string(l), " \t\r\n")
		if t == "---" || strings.HasPrefix(t, "--- ") || t == "..." {
			chunks = append(chunks, yamlChunk{text: cur, line: start})
			cur, start = nil, i+2
			continue
		}
		cur = append(cur, l...)
	}
	return append(chunks, yamlChunk{text: cur, line: start})
}

// yamlValue converts a node to the same generic shape encoding/json produces.
func yamlValue(n *yaml.Node, budget *int) (any, error) {
	*budget--
	if *budget < 0 {
		return nil, fmt.Errorf("document too large (over %d values, check aliases)", maxNodes)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return yamlValue(n.Content[0], budget)
	case yaml.AliasNode:
		return yamlValue(n.Alias, budget)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := yamlValue(c, budget)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		var ordered members // the keys in order, kept when two are equal but for case
		folded := map[string]struct{}{}
		repeats := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: a key must be a plain string", k.Line)
			}
			if k.Tag == "!!merge" {
				return nil, fmt.Errorf("line %d: merge keys (<<) are not supported", k.Line)
			}
			if _, dup := out[k.Value]; dup {
				return nil, fmt.Errorf("line %d: duplicate key %q", k.Line, k.Value)
			}
			val, err := yamlValue(v, budget)
			if err != nil {
				return nil, err
			}
			out[k.Value] = val
			ordered = append(ordered, member{k.Value, val})
			f := foldKey(k.Value)
			_, seen := folded[f]
			repeats = repeats || seen
			folded[f] = struct{}{}
		}
		if repeats {
			return ordered, nil
		}
		return out, nil
	case yaml.ScalarNode:
		return yamlScalar(n)
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

func yamlScalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, fmt.Errorf("line %d: %v", n.Line, err)
		}
		return b, nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			return nil, fmt.Errorf("line %d: %v", n.Line, err)
		}
		return json.Number(strconv.FormatInt(i, 10)), nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, fmt.Errorf("line %d: %v", n.Line, err)
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	}
	return n.Value, nil
}
