package v4

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A document's objects are map[string]any, as encoding/json builds them, unless one
// holds a key twice or two keys equal but for case: then the order of its keys decides
// what BCS's decoder kept (encoding/json decodes the keys of an object in document
// order, each into the field it matches case-insensitively, the later on top of the
// earlier), so such an object is a members list instead, in document order. Only the
// rare text that the plain scan cannot clear (jsonkeys_scan.go) is read token by token
// to build them.

// member is one key and value of an object, as written.
type member struct {
	key   string
	value any
}

// members is an object that holds a key twice, or keys equal but for case, in
// document order.
type members []member

// objectOf returns v's members in a stable order (document order for members, sorted
// keys for a map) when v is an object.
func objectOf(v any) (members, bool) {
	switch o := v.(type) {
	case members:
		return o, true
	case map[string]any:
		out := make(members, 0, len(o))
		for k, x := range o {
			out = append(out, member{k, x})
		}
		slices.SortFunc(out, func(a, b member) int { return strings.Compare(a.key, b.key) })
		return out, true
	}
	return nil, false
}

// isObject reports whether v is an object of either form.
func isObject(v any) bool {
	switch v.(type) {
	case members, map[string]any:
		return true
	}
	return false
}

// lookupFold is the value of key (any case) in object v: the last in document order,
// as BCS's decoder kept; nil when v is no object or lacks it.
func lookupFold(v any, key string) any {
	x, _ := lookupFoldOK(v, key)
	return x
}

// lookupFoldOK is lookupFold, also saying whether the key is there.
func lookupFoldOK(v any, key string) (any, bool) {
	switch o := v.(type) {
	case map[string]any:
		if x, ok := o[key]; ok {
			return x, true
		}
		for _, k := range sortedStringKeys(o) {
			if strings.EqualFold(k, key) {
				return o[k], true
			}
		}
	case members:
		for i := len(o) - 1; i >= 0; i-- {
			if strings.EqualFold(o[i].key, key) {
				return o[i].value, true
			}
		}
	}
	return nil, false
}

// lookupFoldAll is every value of key (any case) in object v, in document order: BCS's
// decoder merged the objects of a key given twice.
func lookupFoldAll(v any, key string) []any {
	if o, ok := v.(members); ok {
		var out []any
		for _, m := range o {
			if strings.EqualFold(m.key, key) {
				out = append(out, m.value)
			}
		}
		return out
	}
	if x, ok := lookupFoldOK(v, key); ok {
		return []any{x}
	}
	return nil
}

// foldKey is key folded so that two keys fold alike exactly when strings.EqualFold (and
// encoding/json, which matched BCS's fields so) holds them equal: each rune stands for
// its Unicode fold set, so that "ſ" (long s) is "s", which strings.ToLower would not
// give. A key in lower-case ASCII is itself (no copy).
func foldKey(key string) string {
	return strings.Map(func(r rune) rune {
		if r >= utf8.RuneSelf { // the smallest of its fold set
			m := r
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				m = min(m, f)
			}
			r = m
		}
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return r
	}, key)
}

// appendJSON appends v, a value orderedValue gave, as JSON: members keep their keys in
// order, each as often as it was given, so that the text reads as written (maps sort
// their keys, as encoding/json does). It is no json.Marshaler: encoding/json would
// validate the text of every nested object again, at a cost quadratic in the depth.
func appendJSON(b []byte, v any) []byte {
	str := func(b []byte, s string) []byte {
		q, _ := json.Marshal(s) // a string always encodes
		return append(b, q...)
	}
	switch x := v.(type) {
	case members:
		b = append(b, '{')
		for i, m := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(str(b, m.key), ':')
			b = appendJSON(b, m.value)
		}
		return append(b, '}')
	case map[string]any:
		b = append(b, '{')
		for i, k := range sortedStringKeys(x) {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(str(b, k), ':')
			b = appendJSON(b, x[k])
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, el := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, el)
		}
		return append(b, ']')
	case string:
		return str(b, x)
	case json.Number:
		return append(b, x...)
	case bool:
		return strconv.AppendBool(b, x)
	}
	return append(b, "null"...)
}

// orderedValue decodes one JSON value, which decoded already as a whole, token by
// token: an object whose keys repeat (in any case) becomes members.
func orderedValue(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return orderedNext(dec)
}

func orderedNext(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		var ms members
		seen := map[string]struct{}{}
		repeats := false
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key, _ := kt.(string)
			folded := foldKey(key)
			if _, dup := seen[folded]; dup {
				repeats = true
			}
			seen[folded] = struct{}{}
			v, err := orderedNext(dec)
			if err != nil {
				return nil, err
			}
			ms = append(ms, member{key, v})
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		if repeats {
			return ms, nil
		}
		m := make(map[string]any, len(ms))
		for _, x := range ms {
			m[x.key] = x.value
		}
		return m, nil
	case json.Delim('['):
		out := []any{}
		for dec.More() {
			v, err := orderedNext(dec)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return out, nil
	}
	return tok, nil // string, json.Number, bool or nil
}
