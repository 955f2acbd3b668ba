package v4

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// encoding/json keeps the last of two equal keys without a word, so
// {"kind":"configmap","kind":"secret"} would be applied as a secret. YAML duplicates are
// refused by splitYAML; a strict parse of JSON input (Validation) gets the same rule from
// one extra token pass over text that already decoded (docs/spec.md "Streams"), and the
// default parse keeps the last value, as BCS's decoder did, with a warning (members.go,
// decodeStruct). Keys that differ only in case are the decoder's.

// CheckDuplicateKeys refuses JSON text in which an object holds the same key twice, at
// any depth, naming the key's path and position: `invalid JSON at line 1, column 40:
// metadata.name: duplicate key "name"`. It is meant for text that decoded already (it
// stops at the first value it cannot read, leaving syntax errors to the decoder). The
// server runs it on the JSON bodies that do not go through Parse or DecodeNode (merge
// patches, agent and operation requests).
func CheckDuplicateKeys(data []byte) error {
	if surelyNoDuplicateKeys(data) { // jsonkeys_scan.go
		return nil
	}
	return duplicateKeysByTokens(data)
}

// duplicateKeysByTokens is CheckDuplicateKeys's token pass, which names the duplicate.
func duplicateKeysByTokens(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	for dec.More() {
		if err := walkKeys(dec, data, 0, &keyPath{}); err != nil {
			if errors.Is(err, errDuplicateKey) {
				return err
			}
			return nil
		}
	}
	return nil
}

// jsonValue is one top-level value of a JSON stream: where it lies in the input, and the
// index of the first document it gives (a top-level array gives one per element).
type jsonValue struct {
	start, end int64
	first      int
	array      bool
}

// checkStreamKeys runs the duplicate-key pass over the values splitJSON found. Paths start
// with "documents[i]." when the stream holds several documents, as Parse's field errors do.
func checkStreamKeys(data []byte, values []jsonValue, multi bool) error {
	docPath := func(i int) string {
		if !multi {
			return ""
		}
		return fmt.Sprintf("documents[%d]", i)
	}
	for _, v := range values {
		if surelyNoDuplicateKeys(data[v.start:v.end]) {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(data[v.start:v.end]))
		if !v.array {
			if err := walkKeys(dec, data, v.start, &keyPath{root: docPath(v.first)}); err != nil {
				return err
			}
			continue
		}
		if _, err := dec.Token(); err != nil { // the '[' that holds the documents
			return jsonSyntaxError(data, err)
		}
		for i := v.first; dec.More(); i++ {
			if err := walkKeys(dec, data, v.start, &keyPath{root: docPath(i)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// errDuplicateKey marks the error of walkKeys that is a duplicate, not a syntax error.
var errDuplicateKey = errors.New("duplicate key")

// duplicateKeyError is walkKeys's duplicate: where it is in the text and in the document.
type duplicateKeyError struct {
	line, col int
	path, key string
}

func (e *duplicateKeyError) Error() string {
	return fmt.Sprintf("invalid JSON at line %d, column %d: %s: %v %q", e.line, e.col, e.path, errDuplicateKey, truncate(e.key, 60))
}

func (e *duplicateKeyError) Unwrap() error { return errDuplicateKey }

// fieldMessage is the field error of a strict parse (ParseValidated), which refuses
// what the default mode resolves.
func (e *duplicateKeyError) fieldMessage() string {
	return fmt.Sprintf("duplicate key %q at line %d, column %d (refused: validate=strict; "+
		"validate=warn keeps the last value, as BCS's decoder did)", truncate(e.key, 60), e.line, e.col)
}

// walkKeys reads one value from dec, whose input starts at base in data, and returns an
// error naming the first key found twice in one object. path is where the value is.
func walkKeys(dec *json.Decoder, data []byte, base int64, path *keyPath) error {
	tok, err := dec.Token()
	if err != nil {
		return jsonSyntaxError(data, err)
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]struct{}{}
		for dec.More() {
			before := dec.InputOffset()
			kt, err := dec.Token()
			if err != nil {
				return jsonSyntaxError(data, err)
			}
			key, _ := kt.(string) // More and Token guarantee a string key here
			path.segs = append(path.segs, pathSeg{key: key})
			if _, dup := seen[key]; dup {
				line, col := lineCol(data, keyStart(data, base+before))
				return &duplicateKeyError{line: line, col: col, path: path.String(), key: key}
			}
			seen[key] = struct{}{}
			if err := walkKeys(dec, data, base, path); err != nil {
				return err
			}
			path.segs = path.segs[:len(path.segs)-1]
		}
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			path.segs = append(path.segs, pathSeg{index: i, isIndex: true})
			if err := walkKeys(dec, data, base, path); err != nil {
				return err
			}
			path.segs = path.segs[:len(path.segs)-1]
		}
	default:
		return nil // a scalar
	}
	_, err = dec.Token() // the closing delimiter
	if err != nil {
		return jsonSyntaxError(data, err)
	}
	return nil
}

// keyPath is where walkKeys is, as a stack of keys and indexes under root, made a
// string (joinKey's) only for the duplicate it names: a string per level, each as long
// as the keys above it, cost a deep document of long keys memory quadratic in its depth.
type keyPath struct {
	root string
	segs []pathSeg
}

// pathSeg is a key of an object or, isIndex, an index of a list.
type pathSeg struct {
	key     string
	index   int
	isIndex bool
}

func (p *keyPath) String() string {
	var b strings.Builder
	b.WriteString(p.root)
	for _, s := range p.segs {
		switch {
		case s.isIndex:
			fmt.Fprintf(&b, "[%d]", s.index)
		case isPlainKey(s.key):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.key)
		default:
			b.WriteString("[" + strconv.Quote(s.key) + "]")
		}
	}
	return b.String()
}

// keyStart skips the blanks and the ',' between the previous token and a key's quote.
func keyStart(data []byte, off int64) int64 {
	for off < int64(len(data)) && data[off] != '"' {
		off++
	}
	return off
}
