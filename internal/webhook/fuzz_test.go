package webhook

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzReviewPatch feeds hostile answers through what the server does with them: decode
// the review, read its patch, apply it. Nothing may panic, and a patch that applies
// never changes the object's name, namespace or kind.
func FuzzReviewPatch(f *testing.F) {
	obj := `{"apiVersion":"v4","kind":"application","metadata":{"name":"a","namespace":"n","labels":{"x":"1"}},"spec":{"instance":1,"list":[1,2]}}`
	for _, s := range []string{
		`{"response":{"uid":"u","allowed":true,"patchType":"JSONPatch","patch":"W3sib3AiOiJhZGQiLCJwYXRoIjoiL2EiLCJ2YWx1ZSI6MX1d"}}`,
		`{"response":{"uid":"u","allowed":true,"patch":[{"op":"add","path":"/metadata/labels/t","value":"b"}]}}`,
		`{"response":{"uid":"u","allowed":true,"patch":[{"op":"move","from":"/metadata","path":"/spec/m"}]}}`,
		`{"response":{"uid":"u","allowed":true,"patch":[{"op":"copy","from":"/spec","path":"/metadata"}]}}`,
		`{"response":{"uid":"u","allowed":true,"patch":[{"op":"replace","path":"/metadata~1name","value":"b"}]}}`,
		`{"response":{"uid":"u","allowed":true,"patch":[{"op":"remove","path":"/spec/list/-"}]}}`,
		`{"response":{"uid":"u","allowed":false,"status":{"message":"no","code":403}}}`,
		`{"response":{"uid":"v"}}`,
		`[]`, `null`, `{"response":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		resp, err := DecodeResponse(data, "u")
		if err != nil {
			return
		}
		patch, err := resp.PatchOf()
		if err != nil || patch == nil {
			return
		}
		out, err := ApplyPatch([]byte(obj), patch)
		if err != nil {
			var fe *ForbiddenPatchError
			_ = errors.As(err, &fe)
			return
		}
		var got struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("patched object %q: %v", out, err)
		}
		if got.Kind != "application" || got.Metadata.Name != "a" || got.Metadata.Namespace != "n" {
			t.Fatalf("patch %s renamed or moved the object: %s", patch, out)
		}
	})
}
