package v4

import (
	"bytes"
	"encoding/json"
	"time"
)

// Document is one object decoded from a stream, with the exact text it came from
// (kept so users can see what they submitted).
type Document struct {
	Object Object
	Raw    []byte
}

// Parse decodes every document in data (JSON or YAML, one or more documents), applies
// defaults and validates. Any problem in any document makes it return FieldErrors listing
// them all; with several documents each path starts with "documents[i].".
func Parse(data []byte) ([]Document, error) {
	return parseStub(data)
}

// SameContent reports whether two objects have the same content, ignoring what the store
// sets (resourceVersion, creationTimestamp). Apply uses it to report "unchanged".
func SameContent(a, b Object) bool {
	if a.GetKind() != b.GetKind() {
		return false
	}
	return bytes.Equal(contentJSON(a), contentJSON(b))
}

func contentJSON(o Object) []byte {
	m := o.GetMeta()
	rv, ct := m.ResourceVersion, m.CreationTimestamp
	m.ResourceVersion, m.CreationTimestamp = "", time.Time{}
	b, err := json.Marshal(o)
	m.ResourceVersion, m.CreationTimestamp = rv, ct
	if err != nil {
		return nil
	}
	return b
}

// parseStub decodes one JSON document without checks; it is replaced by the real decoder.
func parseStub(data []byte) ([]Document, error) {
	var tm TypeMeta
	if err := json.Unmarshal(data, &tm); err != nil {
		return nil, FieldErrors{{Message: err.Error()}}
	}
	obj, err := New(tm.Kind)
	if err != nil {
		return nil, FieldErrors{{Field: "kind", Message: err.Error()}}
	}
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, FieldErrors{{Message: err.Error()}}
	}
	if obj.GetMeta().Namespace == "" {
		obj.GetMeta().Namespace = DefaultNamespace
	}
	return []Document{{Object: obj, Raw: data}}, nil
}
