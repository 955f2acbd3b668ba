package v4

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"
)

// The steps of decodeValue, one per kind of destination: each takes the generic value
// (built from map[string]any, []any, string, json.Number and bool) and reports a value of
// the wrong shape under path instead of storing it.

// decodeTime takes an RFC 3339 time string.
func decodeTime(path string, v any, dst reflect.Value, d *decoder) {
	s, ok := v.(string)
	if !ok {
		d.errs.add(path, "must be an RFC 3339 time string")
		return
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		d.errs.add(path, "must be an RFC 3339 time: %v", err)
		return
	}
	dst.Set(reflect.ValueOf(t))
}

// decodeQuantity takes a number or a string holding one, kept as written.
func decodeQuantity(path string, v any, dst reflect.Value, d *decoder) {
	switch q := v.(type) {
	case string:
		dst.SetString(q)
	case json.Number:
		dst.SetString(q.String())
	default:
		d.errs.add(path, "must be a number or a string holding one, got %s", describe(v))
	}
}

func decodeSlice(path string, v any, dst reflect.Value, d *decoder) {
	arr, ok := v.([]any)
	if !ok {
		d.errs.add(path, "must be a list, got %s", describe(v))
		return
	}
	if len(arr) == 0 {
		dst.SetZero() // an empty list is the zero value, so decode(encode(x)) == x with omitempty
		return
	}
	out := reflect.MakeSlice(dst.Type(), len(arr), len(arr))
	reflect.Copy(out, dst) // a list given twice decodes on top of the earlier one, element by element
	for i, el := range arr {
		decodeValue(fmt.Sprintf("%s[%d]", path, i), el, out.Index(i), d)
	}
	dst.Set(out)
}

// decodeMap decodes the entries in key order (document order for members.go's objects),
// so the problems come in a stable order. A map given twice gets the later entries on
// top of the earlier ones, and an entry given twice keeps its last value, as
// encoding/json (BCS's decoder) did.
func decodeMap(path string, v any, dst reflect.Value, d *decoder) {
	m, ok := objectOf(v)
	if !ok {
		d.errs.add(path, "must be an object, got %s", describe(v))
		return
	}
	if len(m) == 0 {
		return // as for lists: an empty object is the zero value
	}
	out := dst
	if out.IsNil() {
		out = reflect.MakeMapWithSize(dst.Type(), len(m))
	}
	seen := make(map[string]bool, len(m))
	for _, mb := range m {
		k := mb.key
		if seen[k] && d.lenient { // a strict parse refused it already, as decodeStruct says
			d.warn(joinKey(path, k), "%s", duplicateMessage(k, k, dst.Type().Elem(), nil))
		}
		seen[k] = true
		el := reflect.New(dst.Type().Elem()).Elem()
		decodeValue(joinKey(path, k), mb.value, el, d)
		out.SetMapIndex(reflect.ValueOf(k).Convert(dst.Type().Key()), el)
	}
	dst.Set(out)
}

// decodeAs stores v with set when it is a T, else says what it must be.
func decodeAs[T any](path string, v any, d *decoder, must string, set func(T)) {
	x, ok := v.(T)
	if !ok {
		d.errs.add(path, "must be %s, got %s", must, describe(v))
		return
	}
	set(x)
}

// decodeInt takes a JSON integer that fits dst.
func decodeInt(path string, v any, dst reflect.Value, d *decoder) {
	n, ok := v.(json.Number)
	if !ok {
		d.errs.add(path, "must be an integer, got %s", describe(v))
		return
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil || dst.OverflowInt(i) {
		d.errs.add(path, "must be an integer in range, got %s", n)
		return
	}
	dst.SetInt(i)
}

// decodeFloat takes a finite JSON number.
func decodeFloat(path string, v any, dst reflect.Value, d *decoder) {
	n, ok := v.(json.Number)
	if !ok {
		d.errs.add(path, "must be a number, got %s", describe(v))
		return
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		d.errs.add(path, "must be a finite number, got %s", n)
		return
	}
	dst.SetFloat(f)
}
