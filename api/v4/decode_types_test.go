package v4

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Every field of every kind must be one the decoder can fill: a field it cannot makes
// a document that carries it (a `berth get -o json` of a stored object re-applied, for
// one) fail to parse, or a map key of another kind than string panic in Convert.
func TestDecoderCoversEveryFieldType(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(path string, typ reflect.Type)
	walk = func(path string, typ reflect.Type) {
		if seen[typ] {
			return
		}
		seen[typ] = true
		switch typ {
		case timeType, quantityType, wfItemType:
			return
		}
		switch typ.Kind() {
		case reflect.Pointer, reflect.Slice:
			walk(path+"[]", typ.Elem())
		case reflect.Map:
			if typ.Key().Kind() != reflect.String {
				t.Errorf("%s: map key %s is not a string", path, typ.Key())
			}
			walk(path+"{}", typ.Elem())
		case reflect.Struct:
			for _, f := range infoOf(typ).fields {
				walk(path+"."+f.name, typ.FieldByIndex(f.index).Type)
			}
		default: // a leaf: the decoder must fill it from a value of its JSON type
			var sample any = json.Number("1")
			switch typ.Kind() {
			case reflect.String:
				sample = "x"
			case reflect.Bool:
				sample = true
			}
			var d decoder
			decodeValue(path, sample, reflect.New(typ).Elem(), &d)
			if len(d.errs) > 0 {
				t.Errorf("%s (%s): %v", path, typ, d.errs)
			}
		}
	}
	for _, kind := range append(Kinds(), KindNode) { // and the agents' nodes (DecodeNode)
		obj, err := New(kind)
		if err != nil {
			t.Fatal(err)
		}
		walk(string(kind), reflect.TypeOf(obj))
	}
}
