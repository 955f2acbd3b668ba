package v4

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// resourceDoc is a workflow whose step "roll" runs a resource template with manifest,
// and whose step "after" reads the resource step's output ref.
func resourceDoc(t *testing.T, action, manifest, ref string, extra map[string]any) string {
	t.Helper()
	roll := map[string]any{"name": "roll", "resource": map[string]string{"action": action, "manifest": manifest}}
	for k, v := range extra {
		roll[k] = v
	}
	b, err := json.Marshal(map[string]any{"apiVersion": "v4", "kind": "workflow", "metadata": map[string]string{"name": "w", "namespace": "ml"},
		"spec": map[string]any{"entrypoint": "main", "arguments": map[string]any{"parameters": []any{map[string]string{"name": "key", "value": "k1"}}},
			"templates": []any{
				map[string]any{"name": "main", "steps": []any{[]any{map[string]string{"name": "r", "template": "roll"}},
					[]any{map[string]any{"name": "after", "template": "echo", "arguments": map[string]any{"parameters": []any{map[string]string{"name": "v", "value": ref}}}}}}},
				roll,
				map[string]any{"name": "echo", "inputs": map[string]any{"parameters": []any{map[string]string{"name": "v"}}},
					"container": map[string]any{"image": "x", "args": []string{"{{inputs.parameters.v}}"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const rsManifest = "kind: deployment\nmetadata: {name: web}\nspec:\n  instance: 1\n  template:\n    spec:\n      containers:\n" +
	"      - image: web:1\n        env: [{name: MODEL, value: \"{{workflow.parameters.key}}\"}]\n"

// A resource template's action and manifest are checked at admission: one object of a
// kind a step may write, whose kind, name and namespace do not come from placeholders;
// its outputs are its object's name and resourceVersion.
func TestWorkflowResourceTemplate(t *testing.T) {
	ok := resourceDoc(t, WfResourceApply, rsManifest, "{{steps.r.outputs.parameters.resourceVersion}}", nil)
	docs, err := Parse([]byte(ok))
	if err != nil {
		t.Fatalf("valid resource template refused: %v", err)
	}
	if typ := docs[0].Object.(*Workflow).Spec.Templates[1].Type(); typ != WfTypeResource {
		t.Errorf("type %q", typ)
	}
	for _, c := range []struct{ name, doc, field, msg string }{
		{"action", resourceDoc(t, "patch", rsManifest, "x", nil), "spec.templates[1].resource.action", "must be one of"},
		{"no manifest", resourceDoc(t, "apply", "", "x", nil), "spec.templates[1].resource.manifest", "required"},
		{"two documents", resourceDoc(t, "apply", rsManifest+"---\n"+rsManifest, "x", nil), "spec.templates[1].resource.manifest", "exactly one document"},
		{"a workflow", resourceDoc(t, "create", `{"kind":"workflow","metadata":{"name":"x"}}`, "x", nil), "spec.templates[1].resource.manifest",
			"kind workflow may not be written by a resource step"},
		{"a cronworkflow", resourceDoc(t, "create", `{"kind":"cronworkflow","metadata":{"name":"x"}}`, "x", nil), "spec.templates[1].resource.manifest", "kind cronworkflow may not"},
		{"a node", resourceDoc(t, "create", `{"kind":"node","metadata":{"name":"x"}}`, "x", nil), "spec.templates[1].resource.manifest", "written by berth itself"},
		{"an invalid object", resourceDoc(t, "apply", strings.Replace(rsManifest, "instance: 1", "instance: -1", 1), "x", nil), "spec.templates[1].resource.manifest", "spec.instance"},
		{"kind from a parameter", resourceDoc(t, "apply", `{"kind":"{{workflow.parameters.key}}","metadata":{"name":"x"}}`, "x", nil),
			"spec.templates[1].resource.manifest", "does not parse with its {{...}} placeholders filled"},
		{"namespace from a parameter", resourceDoc(t, "apply", strings.Replace(rsManifest, "{name: web}", "{name: web, namespace: \"n{{workflow.parameters.key}}\"}", 1), "x", nil),
			"spec.templates[1].resource.manifest", "must not come from {{...}} placeholders"},
		{"an unknown reference", resourceDoc(t, "apply", strings.Replace(rsManifest, "workflow.parameters.key", "workflow.parameters.nope", 1), "x", nil),
			"spec.templates[1].resource", "nope"},
		{"declared outputs", resourceDoc(t, "apply", rsManifest, "x", map[string]any{"outputs": map[string]any{"parameters": []any{map[string]any{"name": "o", "valueFrom": map[string]string{"path": "/o"}}}}}),
			"spec.templates[1].outputs", "not declared"},
		{"an output it has not", resourceDoc(t, "apply", rsManifest, "{{steps.r.outputs.parameters.uid}}", nil), "spec.templates[0]", `no output parameter "uid"`},
		{"no result", resourceDoc(t, "apply", rsManifest, "{{steps.r.outputs.result}}", nil), "spec.templates[0]", "no standard output"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc))
			if err == nil || !strings.Contains(err.Error(), c.field) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("got %v, want %s: %s", err, c.field, c.msg)
			}
		})
	}
}

// ParseWfResource puts an object without a namespace in the workflow's, and keeps one
// it names (for the caller to refuse).
func TestParseWfResource(t *testing.T) {
	obj, err := ParseWfResource(strings.ReplaceAll(rsManifest, "{{workflow.parameters.key}}", "k"), "ml")
	if err != nil || obj.GetMeta().Namespace != "ml" || obj.GetKind() != KindDeployment {
		t.Fatalf("%v, %v", obj, err)
	}
	obj, err = ParseWfResource(`{"kind":"configmap","metadata":{"name":"c","namespace":"other"},"datas":{}}`, "ml")
	if err != nil || obj.GetMeta().Namespace != "other" {
		t.Fatalf("%v, %v", obj, err)
	}
	if _, err := ParseWfResource(strings.Repeat(" ", maxWfManifest+1), "ml"); err == nil {
		t.Error("a manifest past its bound parsed")
	}
}

// FuzzWfResource: a manifest never panics the parse, and what it accepts is one object
// of a kind a step may write, in the namespace given when it names none.
func FuzzWfResource(f *testing.F) {
	f.Add(rsManifest, "ml")
	f.Add(`{"kind":"configmap","metadata":{"name":"{{x}}","namespace":"o"},"datas":{}}`, "")
	f.Add("kind: workflow\nspec: {templates: [{name: r, resource: {manifest: \"{{\"}}]}\n", "ml")
	f.Add("kind: secret\nmetadata: {name: s}\n---\nkind: secret\n", "ml")
	f.Fuzz(func(t *testing.T, manifest, ns string) {
		obj, err := ParseWfResourceTemplate(manifest, ns)
		if err != nil {
			return
		}
		if !slices.Contains(WfResourceKinds(), obj.GetKind()) {
			t.Fatalf("accepted kind %s", obj.GetKind())
		}
		if obj.GetMeta().Namespace == "" && ns != "" {
			t.Fatal("no namespace")
		}
	})
}
