package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/bcs"
)

// ?validate= on the document routes: by default a body with a key BCS's decoder dropped
// and a key given twice is accepted, each with a Warning header, and the object stored is
// the resolved one; validate=strict refuses it with 422 and writes nothing; a bad value
// is 400 naming the parameter; a token of another namespace gains nothing by it.
func TestValidateParameter(t *testing.T) {
	base := newTestServer(t, Config{})
	coll := base + "/v1/namespaces/val/configmaps"
	lenient := func(name string) string {
		return strings.Replace(strings.TrimSuffix(cmJSON("val", name, "eA=="), "}")+`,"bogus":1}`,
			`"content":"eA=="`, `"content":"eA==","content":"eQ=="`, 1)
	}
	wantWarnings := []string{`datas.k.content duplicate key \"content\": the earlier value is dropped, the last one is kept`,
		`bogus unknown field \"bogus\" is dropped, as BCS's decoder did`}
	checkWarnings := func(step string, r response) {
		t.Helper()
		got := strings.Join(r.header.Values("Warning"), "\n")
		for _, w := range wantWarnings {
			if !strings.Contains(got, w) {
				t.Errorf("%s: Warning headers %q, want %q", step, got, w)
			}
		}
	}
	content := func(name string) string {
		t.Helper()
		obj, err := testStore.Get(context.Background(), v4.KindConfigMap, "val", name)
		if err != nil {
			return err.Error()
		}
		return obj.(*v4.ConfigMap).Datas["k"].Content
	}

	r := call(t, http.MethodPost, coll, lenient("a"))
	wantStatus(t, r, http.StatusCreated)
	checkWarnings("create", r)
	if got := content("a"); got != "eQ==" {
		t.Fatalf("stored content %q, want the last value", got)
	}
	r = call(t, http.MethodPut, coll+"/a?validate=warn", lenient("a"))
	wantStatus(t, r, http.StatusOK)
	checkWarnings("update", r)
	r = call(t, http.MethodPost, base+"/v1/apply", lenient("b"))
	wantStatus(t, r, http.StatusOK)
	checkWarnings("apply", r)

	for _, tc := range []struct{ name, method, url, body string }{
		{"create", http.MethodPost, coll + "?validate=strict", lenient("c")},
		{"update", http.MethodPut, coll + "/a?validate=strict", strings.Replace(lenient("a"), "eQ==", "eg==", 1)},
		{"apply", http.MethodPost, base + "/v1/apply?validate=strict", lenient("c")},
		{"plan", http.MethodPost, base + "/v1/plan?validate=strict", lenient("c")},
	} {
		r := call(t, tc.method, tc.url, tc.body)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		fields := map[string]bool{}
		for _, d := range decodeError(t, r).Details {
			fields[d.Field] = true
		}
		if !fields["datas.k.content"] || !fields["bogus"] {
			t.Errorf("strict %s: details %v", tc.name, fields)
		}
	}
	if got := content("c"); !strings.Contains(got, "not found") {
		t.Errorf("a strict refusal stored c: %s", got)
	}
	if got := content("a"); got != "eQ==" {
		t.Errorf("a strict refusal changed a: %s", got)
	}

	for _, u := range []string{coll + "?validate=true", base + "/v1/apply?validate=lenient", base + "/v1/plan?validate=1"} {
		r := call(t, http.MethodPost, u, cmJSON("val", "d", "eA=="))
		wantStatus(t, r, http.StatusBadRequest)
		if e := decodeError(t, r); !strings.Contains(e.Message, "query parameter validate=") {
			t.Errorf("%s: %q", u, e.Message)
		}
	}

	// The parameter only makes decoding stricter: another namespace stays out of reach.
	other := otherNamespaceToken(t, base)
	r = callAs(t, "", http.MethodPost, coll+"?validate=strict", cmJSON("val", "e", "eA=="), other)
	wantStatus(t, r, http.StatusForbidden)
}

// Through BCS's routes: by default the document BCS accepted is accepted, berth's
// warnings in the envelope; ?validate=strict refuses it with BCS's bad-data code.
func TestBCSValidate(t *testing.T) {
	url := newTestServer(t, Config{})
	door := url + "/bcsapi/v4/scheduler/mesos/namespaces/bv/applications"
	doc := strings.Replace(appDoc("bv", "nginx"), `"restartPolicy"`, `"bogus":1,"restartPolicy"`, 1)
	a := bcsCall(t, http.MethodPost, door, doc, "")
	wantBCS(t, a, bcs.CodeSuccess)
	if w := strings.Join(a.Warnings, "\n"); !strings.Contains(w, `bogus unknown field "bogus" is dropped, as BCS's decoder did`) {
		t.Errorf("warnings %q", a.Warnings)
	}
	a = bcsCall(t, http.MethodPost, door+"?validate=strict", strings.Replace(doc, `"name":"web"`, `"name":"web2"`, 1), "")
	wantBCS(t, a, bcs.CodeBadRequestData)
	if !strings.Contains(a.Message, "bogus") {
		t.Errorf("strict: %q", a.Message)
	}
	if _, err := testStore.Get(context.Background(), v4.KindApplication, "bv", "web2"); err == nil {
		t.Error("a strict refusal stored the application")
	}
	a = bcsCall(t, http.MethodPut, door+"?validate=nope", doc, "")
	wantBCS(t, a, bcs.CodeDriverParameter)
}
