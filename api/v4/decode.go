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
// "IntersectionItem"); a key that matches no field is an error, or, when the document
// is read leniently (Validation), a warning and the key is dropped.

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
// ignores, docs/compat.md). lenient is Parse's ValidateWarn: a key that matches no field
// is dropped and a key given twice resolved as BCS's decoder did, each with a warning;
// otherwise (strict, and the zero decoder) both are errors.
type decoder struct {
	errs     FieldErrors
	warnings []Warning
	lenient  bool
	// streamWarnings is how many warnings the stream's earlier documents kept: all of
	// them together keep maxWarnings, and past it no warning is built.
	streamWarnings int
	// typos maps the path of a field to the unknown key dropped beside it that looks
	// like a misspelling of it (lenient), so that an error about the field names it.
	typos map[string]string
}

// maxWarningField bounds the path a warning names: a hostile document's keys may be
// long and deep.
const maxWarningField = 200

// warn records a warning at path, while the stream's bound allows.
func (d *decoder) warn(path, format string, args ...any) {
	if !d.warningsFull() {
		d.warnings = append(d.warnings, Warning{Field: truncate(path, maxWarningField), Message: fmt.Sprintf(format, args...)})
	}
}

// decodeValue stores v into dst (addressable), reporting problems under path. Like
// encoding/json, it decodes into what dst holds: a key given twice (lenient) decodes its
// later value on top of the earlier one, as BCS's decoder did.
func decodeValue(path string, v any, dst reflect.Value, d *decoder) {
	if v == nil { // null leaves the value, or empties a pointer, map or list, as encoding/json does
		switch dst.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice:
			dst.SetZero()
		}
		return
	}
	switch dst.Type() {
	case timeType:
		decodeTime(path, v, dst, d)
		return
	case quantityType:
		decodeQuantity(path, v, dst, d)
		return
	case wfItemType:
		decodeWfItem(path, v, dst, d)
		return
	}
	switch dst.Kind() {
	case reflect.Pointer:
		if dst.IsNil() {
			dst.Set(reflect.New(dst.Type().Elem()))
		}
		decodeValue(path, v, dst.Elem(), d)
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
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64: // decodeInt checks the range
		decodeInt(path, v, dst, d)
	case reflect.Float64:
		decodeFloat(path, v, dst, d)
	default:
		d.errs.add(path, "cannot be decoded (unsupported type %s)", dst.Type())
	}
}

// decodeStruct decodes an object's keys in order (document order for members.go's
// objects), each into the field it matches.
func decodeStruct(path string, v any, dst reflect.Value, d *decoder) {
	m, ok := objectOf(v)
	if !ok {
		d.errs.add(path, "must be an object, got %s", describe(v))
		return
	}
	info := infoOf(dst.Type())
	seen := map[string]string{} // field -> the key that set it
	for _, mb := range m {
		key := mb.key
		f, ok := info.lookup(key)
		if !ok {
			if why, ignored := ignoredKey(dst.Type(), key); ignored {
				d.warn(joinKey(path, key), "is ignored by berth (%s)", why)
				continue
			}
			d.unknownField(path, key, info)
			continue
		}
		field := dst.FieldByIndex(f.index)
		if other, dup := seen[f.name]; dup {
			// A strict parse refused a key given twice as written already (with its
			// line, jsonkeys.go) and reads on as the default mode, so that the answer
			// lists the document's other problems; keys equal but for case are refused here.
			if !d.lenient && other != key {
				d.errs.add(joinKey(path, key), "duplicate of %q (keys match case-insensitively)", truncate(other, 60))
				continue
			}
			if d.lenient && !d.warningsFull() {
				d.warn(joinKey(path, f.name), "%s", duplicateMessage(other, key, field.Type(), mb.value))
			}
		}
		seen[f.name] = key
		decodeValue(joinKey(path, f.name), mb.value, field, d)
	}
}

// warningsFull reports whether the stream's bound on warnings is reached.
func (d *decoder) warningsFull() bool {
	return d.streamWarnings+len(d.warnings) >= maxWarnings
}

// unknownField reports a key of the object at path that matches no field: an error, or
// (lenient) a warning that it is dropped, as BCS's decoder dropped it.
func (d *decoder) unknownField(path, key string, info *structInfo) {
	if !d.lenient {
		d.errs.add(joinKey(path, key), "%s", unknownFieldMessage(path, key, info.names()))
		return
	}
	if d.warningsFull() {
		return // nothing more is said; a hostile document's keys cost no message each
	}
	msg := fmt.Sprintf("unknown field %q is dropped, as BCS's decoder did", truncate(key, 60))
	if misplacedUnionData(path, key) {
		msg += ": " + misplacedUnionDataHint
	} else if s := closest(key, info.names()); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
		if len(d.typos) < maxWarnings {
			if d.typos == nil {
				d.typos = map[string]string{}
			}
			d.typos[joinKey(path, s)] = key
		}
	}
	d.warn(joinKey(path, key), "%s", msg)
}

// nameTypos adds to each error about a field the unknown key dropped beside it that
// looks like its misspelling: "spec.instance: required" is more helpful with "instanse"
// named.
func (d *decoder) nameTypos(errs FieldErrors) {
	for i, e := range errs {
		if key, ok := d.typos[e.Field]; ok {
			errs[i].Message += fmt.Sprintf(" (the document's %q, dropped as an unknown field, may be a misspelling of it)", truncate(key, 60))
		}
	}
}

// duplicateMessage says how a key given twice was resolved: the later value decodes on
// top of the earlier (encoding/json's rule, which BCS's decoder followed), which merges
// two objects key by key (and two lists of objects element by element), and otherwise
// keeps the last value.
func duplicateMessage(earlier, key string, t reflect.Type, v any) string {
	msg := fmt.Sprintf("duplicate key %q", truncate(key, 60))
	if earlier != key {
		msg += fmt.Sprintf(" (it matches %q: keys match case-insensitively)", truncate(earlier, 60))
	}
	if v == nil {
		switch t.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice:
			return msg + ": the later null empties the field, as BCS's decoder did"
		}
		return msg + ": the later null is ignored and the earlier value kept, as BCS's decoder did"
	}
	if merges(t, v) {
		return msg + ": the later value is merged into the earlier one, key by key, the later keys winning, as BCS's decoder did"
	}
	return msg + lastKept
}

// lastKept ends the warning about a key given twice whose later value replaced the
// earlier one.
const lastKept = ": the earlier value is dropped, the last one is kept, as BCS's decoder did"

// merges reports whether decoding v on top of a value of type t keeps some of the
// earlier value: an object into a struct or map, a list into a list of objects.
func merges(t reflect.Type, v any) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		return t != timeType && isObject(v)
	case reflect.Map:
		switch o := v.(type) {
		case map[string]any:
			return len(o) > 0
		case members:
			return len(o) > 0
		}
		return false
	case reflect.Slice:
		arr, ok := v.([]any)
		e := t.Elem()
		for e.Kind() == reflect.Pointer {
			e = e.Elem()
		}
		return ok && len(arr) > 0 && (e.Kind() == reflect.Struct || e.Kind() == reflect.Map)
	}
	return false
}

// misplacedUnionDataHint explains a unionData key inside a unionData element, a common
// slip in BCS's constraint lists.
const misplacedUnionDataHint = `"unionData" is misplaced inside a unionData element; ` +
	"close the previous intersectionItem element first, so that each unionData list sits directly in an intersectionItem element"

func misplacedUnionData(path, key string) bool {
	return strings.EqualFold(key, "unionData") && strings.HasSuffix(path, "]") && strings.Contains(path, "unionData[")
}

func unknownFieldMessage(path, key string, known []string) string {
	if misplacedUnionData(path, key) {
		return "unknown field: " + misplacedUnionDataHint
	}
	msg := fmt.Sprintf("unknown field %q", truncate(key, 60))
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
	case map[string]any, members:
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
