package v4

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
)

// WfItem is one item of a withItems loop: a string, number or boolean ({{item}}), or an
// object of them ({{item.name}}), as Argo takes. Numbers keep the text they were written
// with.
type WfItem struct {
	Value  string
	Fields map[string]string
}

// String is the item as {{item}} gives it: the value, or an object as compact JSON.
func (i WfItem) String() string {
	if i.Fields == nil {
		return i.Value
	}
	b, _ := json.Marshal(i.Fields) // a map of strings always marshals
	return string(b)
}

// MarshalJSON writes the item as a string or an object.
func (i WfItem) MarshalJSON() ([]byte, error) {
	if i.Fields != nil {
		return json.Marshal(i.Fields)
	}
	return json.Marshal(i.Value)
}

// UnmarshalJSON reads what MarshalJSON writes, and numbers and booleans (for clients
// that decode with encoding/json).
func (i *WfItem) UnmarshalJSON(b []byte) error {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return err
	}
	var d decoder
	decodeWfItem("item", v, reflect.ValueOf(i).Elem(), &d)
	if len(d.errs) > 0 {
		return d.errs
	}
	return nil
}

var wfItemType = reflect.TypeFor[WfItem]()

// decodeWfItem is the decoder's rule for WfItem.
func decodeWfItem(path string, v any, dst reflect.Value, d *decoder) {
	item := WfItem{}
	if s, ok := scalarText(v); ok {
		item.Value = s
		dst.Set(reflect.ValueOf(item))
		return
	}
	m, ok := objectOf(v)
	if !ok {
		d.errs.add(path, "must be a string, number, boolean or an object of them, got %s", describe(v))
		return
	}
	item.Fields = make(map[string]string, len(m))
	for _, mb := range m {
		s, ok := scalarText(mb.value)
		if !ok {
			d.errs.add(joinKey(path, mb.key), "must be a string, number or boolean, got %s", describe(mb.value))
			continue
		}
		item.Fields[mb.key] = s
	}
	dst.Set(reflect.ValueOf(item))
}

func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}
