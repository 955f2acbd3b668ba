package customres

import "testing"

// Any body is parsed or refused, never a panic; what is accepted keeps its bounds.
func FuzzParse(f *testing.F) {
	f.Add([]byte(widgetCRD))
	f.Add([]byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"a":[1,{"b":null}]}}`))
	f.Add([]byte(`{"spec":{"names":"x","versions":[7]},"metadata":[]}`))
	def := Definition{Name: "widgets.example.com", Group: "example.com", Version: "v1", Plural: "widgets", Singular: "widget", Kind: "Widget"}
	f.Fuzz(func(t *testing.T, body []byte) {
		if d, doc, err := ParseDefinition(body, ""); err == nil {
			if CheckDefinitionName(d.Name) != nil || DefinitionOf(doc) != d {
				t.Fatalf("accepted %+v, read back %+v", d, DefinitionOf(doc))
			}
		}
		if name, doc, err := def.Resource(body, "dev", ""); err == nil {
			if CheckName("name", name) != nil {
				t.Fatalf("accepted the name %q", name)
			}
			Stamp(doc, "dev", "2026-01-01T00:00:00Z", "u")
			Carry(doc, doc)
		}
	})
}
