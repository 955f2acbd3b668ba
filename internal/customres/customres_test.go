package customres

import (
	"errors"
	"strings"
	"testing"
)

const widgetCRD = `{"apiVersion":"v4","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},
 "spec":{"group":"example.com","version":"v1","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"}}}`

func TestParseDefinition(t *testing.T) {
	d, doc, err := ParseDefinition([]byte(widgetCRD), "")
	if err != nil {
		t.Fatal(err)
	}
	want := Definition{Name: "widgets.example.com", Group: "example.com", Version: "v1", Plural: "widgets", Singular: "widget", Kind: "Widget"}
	if d != want || DefinitionOf(doc) != want {
		t.Fatalf("got %+v and %+v, want %+v", d, DefinitionOf(doc), want)
	}
	if _, _, err := ParseDefinition([]byte(widgetCRD), "gadgets.example.com"); err == nil {
		t.Fatal("a path naming another definition was accepted")
	}
	versions := `{"kind":"CustomResourceDefinition","apiVersion":"apiextensions.k8s.io/v1","spec":{"group":"a.io","versions":[{"name":"v2"}],"names":{"plural":"gears","singular":"gear","kind":"Gear"}}}`
	if d, _, err := ParseDefinition([]byte(versions), ""); err != nil || d.APIVersion() != "a.io/v2" || d.Name != "gears.a.io" {
		t.Fatalf("spec.versions: %+v %v", d, err)
	}
}

func TestParseDefinitionRefuses(t *testing.T) {
	for field, body := range map[string]string{
		"spec.group":         strings.Replace(widgetCRD, `"example.com"`, `"Example/com"`, 1),
		"spec.names.plural":  strings.Replace(widgetCRD, `"widgets"`, `"../x"`, 1),
		"spec.names.kind":    strings.Replace(widgetCRD, `"Widget"`, `"Wid get"`, 1),
		"spec.scope":         strings.Replace(widgetCRD, `"Namespaced"`, `"Cluster"`, 1),
		"metadata.name":      strings.Replace(widgetCRD, `"widgets.example.com"`, `"other.example.com"`, 1),
		"apiVersion":         strings.Replace(widgetCRD, `"v4"`, `"v9"`, 1),
		"spec.version":       strings.Replace(widgetCRD, `"v1"`, `""`, 1),
		"body":               `{"a":"` + strings.Repeat("x", MaxBytes) + `"}`,
		"spec.names.widgets": strings.Replace(widgetCRD, `"kind":"Widget"`, `"kind":"Widget","widgets":`+strings.Repeat("[", MaxDepth)+strings.Repeat("]", MaxDepth), 1),
	} {
		_, _, err := ParseDefinition([]byte(body), "")
		var ie *InvalidError
		if !errors.As(err, &ie) || !strings.HasPrefix(ie.Field, field) {
			t.Errorf("%s: %v", field, err)
		}
	}
	if _, _, err := ParseDefinition([]byte(`[1]`), ""); !errors.Is(err, ErrUnreadable) {
		t.Errorf("an array: %v", err)
	}
	if _, _, err := ParseDefinition([]byte(`{"a":1}{}`), ""); !errors.Is(err, ErrUnreadable) {
		t.Errorf("two values: %v", err)
	}
	long := `{"` + strings.Repeat("k", MaxKeyBytes+1) + `":1}`
	if _, _, err := ParseDefinition([]byte(long), ""); err == nil {
		t.Error("a key too long was accepted")
	}
}

func TestResource(t *testing.T) {
	d, _, err := ParseDefinition([]byte(widgetCRD), "")
	if err != nil {
		t.Fatal(err)
	}
	body := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","resourceVersion":"9","uid":"x"},"spec":{"size":3}}`
	name, doc, err := d.Resource([]byte(body), "dev", "")
	if err != nil || name != "w1" {
		t.Fatalf("%q %v", name, err)
	}
	Stamp(doc, "dev", "2026-01-01T00:00:00Z", "u-1")
	m := doc["metadata"].(map[string]any)
	if m["namespace"] != "dev" || m["uid"] != "u-1" || m["resourceVersion"] != nil {
		t.Fatalf("stamped metadata %v", m)
	}
	for what, bad := range map[string]string{
		"apiVersion":         strings.Replace(body, "example.com/v1", "example.com/v2", 1),
		"kind":               strings.Replace(body, `"Widget"`, `"Gadget"`, 1),
		"metadata.name":      strings.Replace(body, `"w1"`, `"a/b"`, 1),
		"metadata.namespace": strings.Replace(body, `"name":"w1"`, `"name":"w1","namespace":"prod"`, 1),
	} {
		var ie *InvalidError
		if _, _, err := d.Resource([]byte(bad), "dev", ""); !errors.As(err, &ie) || ie.Field != what {
			t.Errorf("%s: %v", what, err)
		}
	}
	if _, _, err := d.Resource([]byte(body), "dev", "w2"); err == nil {
		t.Error("a path naming another resource was accepted")
	}
}
