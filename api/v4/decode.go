package v4

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The decoder fills a typed object from a generic value and, unlike encoding/json with
// DisallowUnknownFields, keeps going after a problem so that one answer lists them all.
// Keys match the JSON names case-insensitively, as BCS's Go decoder did ("KeyOrPath",
// "IntersectionItem"); a key that matches no field is an error.

type structField struct {
	name  string // JSON name
	index []int  // reflect index path through embedded structs
}

type structInfo struct {
	fields []structField
	byName map[string]int // exact JSON name or alias -> position in fields
}

var structCache sync.Map // reflect.Type -> *structInfo

func infoOf(t reflect.Type) *structInfo {
	if v, ok := structCache.Load(t); ok {
		return v.(*structInfo)
	}
	info := &structInfo{byName: map[string]int{}}
	collectFields(t, nil, info)
	structCache.Store(t, info)
	return info
}

func collectFields(t reflect.Type, prefix []int, info *structInfo) {
	for i := range t.NumField() {
		f := t.Field(i)
		index := append(slices.Clone(prefix), i)
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			collectFields(f.Type, index, info)
			continue
		}
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		info.byName[name] = len(info.fields)
		if alias := f.Tag.Get("alias"); alias != "" {
			info.byName[alias] = len(info.fields)
		}
		info.fields = append(info.fields, structField{name: name, index: index})
	}
}

// lookup finds the field for key: the exact name or alias first, then case-insensitively.
func (s *structInfo) lookup(key string) (structField, bool) {
	if i, ok := s.byName[key]; ok {
		return s.fields[i], true
	}
	for name, i := range s.byName {
		if strings.EqualFold(name, key) {
			return s.fields[i], true
		}
	}
	return structField{}, false
}

func (s *structInfo) names() []string {
	out := make([]string, 0, len(s.fields))
	for _, f := range s.fields {
		out = append(out, f.name)
	}
	return out
}

var (
	timeType     = reflect.TypeFor[time.Time]()
	quantityType = reflect.TypeFor[Quantity]()
)

// decoder gathers what decoding one document found: problems (the document is refused)
// and warnings (it is accepted, and the user is told: a key BCS declares that berth
// ignores, docs/compat.md).
type decoder struct {
	errs     FieldErrors
	warnings []Warning
}

// warn records a warning at path.
func (d *decoder) warn(path, format string, args ...any) {
	if len(d.warnings) < maxWarnings {
		d.warnings = append(d.warnings, Warning{Field: path, Message: fmt.Sprintf(format, args...)})
	}
}

// decodeValue stores v into dst (addressable), reporting problems under path.
func decodeValue(path string, v any, dst reflect.Value, d *decoder) {
	if v == nil {
		return // null leaves the zero value, as encoding/json does
	}
	switch dst.Type() {
	case timeType:
		decodeTime(path, v, dst, d)
		return
	case quantityType:
		decodeQuantity(path, v, dst, d)
		return
	}
	switch dst.Kind() {
	case reflect.Pointer:
		p := reflect.New(dst.Type().Elem())
		decodeValue(path, v, p.Elem(), d)
		dst.Set(p)
	case reflect.Struct:
		decodeStruct(path, v, dst, d)
	case reflect.Slice:
		decodeSlice(path, v, dst, d)
	case reflect.Map:
		decodeMap(path, v, dst, d)
	case reflect.String:
		decodeAs(path, v, d, "a string", dst.SetString)
	case reflect.Bool:
		decodeAs(path, v, d, "true or false", dst.SetBool)
	case reflect.Int, reflect.Int64:
		decodeInt(path, v, dst, d)
	case reflect.Float64:
		decodeFloat(path, v, dst, d)
	default:
		d.errs.add(path, "cannot be decoded (unsupported type %s)", dst.Type())
	}
}

func decodeStruct(path string, v any, dst reflect.Value, d *decoder) {
	m, ok := v.(map[string]any)
	if !ok {
		d.errs.add(path, "must be an object, got %s", describe(v))
		return
	}
	info := infoOf(dst.Type())
	seen := map[string]string{}
	for _, key := range sortedStringKeys(m) {
		f, ok := info.lookup(key)
		if !ok {
			if why, ignored := ignoredKey(dst.Type(), key); ignored {
				d.warn(joinKey(path, key), "is ignored by berth (%s)", why)
				continue
			}
			d.errs.add(joinKey(path, key), "%s", unknownFieldMessage(path, key, info.names()))
			continue
		}
		if other, dup := seen[f.name]; dup {
			d.errs.add(joinKey(path, key), "duplicate of %q (keys match case-insensitively)", other)
			continue
		}
		seen[f.name] = key
		decodeValue(joinKey(path, f.name), m[key], dst.FieldByIndex(f.index), d)
	}
}

func unknownFieldMessage(path, key string, known []string) string {
	if strings.EqualFold(key, "unionData") && strings.HasSuffix(path, "]") && strings.Contains(path, "unionData[") {
		return `unknown field: "unionData" is misplaced inside a unionData element; ` +
			"close the previous intersectionItem element first, so that each unionData list sits directly in an intersectionItem element"
	}
	msg := fmt.Sprintf("unknown field %q", key)
	if s := closest(key, known); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg
}

func joinKey(path, key string) string {
	if isPlainKey(key) {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

func isPlainKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

func describe(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("string %q", truncate(x, 40))
	case json.Number:
		return "number " + x.String()
	case bool:
		return fmt.Sprintf("%t", x)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
