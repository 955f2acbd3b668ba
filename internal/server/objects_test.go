package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestObjectLifecycle(t *testing.T) {
	base := newTestServer(t, Config{})
	ns := "life"
	coll := base + "/v1/namespaces/" + ns + "/configmaps"

	// The definition keeps the exact bytes, spacing included.
	body := "  " + cmJSON(ns, "cfg", "aGVsbG8=") + "\n"
	r := call(t, http.MethodPost, coll, body)
	wantStatus(t, r, http.StatusCreated)
	meta := objectMeta(t, r.body)
	if meta.ResourceVersion == "" || meta.CreationTimestamp.IsZero() || meta.Name != "cfg" {
		t.Fatalf("created object metadata %+v", meta)
	}
	wantStatus(t, call(t, http.MethodPost, coll, cmJSON(ns, "cfg", "aGVsbG8=")), http.StatusConflict)
	wantStatus(t, call(t, http.MethodPost, coll, cmJSON(ns, "other", "eA==")), http.StatusCreated)

	r = call(t, http.MethodGet, coll+"/cfg", "")
	wantStatus(t, r, http.StatusOK)
	if got := objectMeta(t, r.body); got.ResourceVersion != meta.ResourceVersion {
		t.Fatalf("get rv %s, want %s", got.ResourceVersion, meta.ResourceVersion)
	}
	r = call(t, http.MethodGet, coll+"/cfg/definition", "")
	wantStatus(t, r, http.StatusOK)
	if string(r.body) != body || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("definition %q (%s), want %q", r.body, r.header.Get("Content-Type"), body)
	}

	// Lists: in the namespace, and across namespaces.
	for _, url := range []string{coll, base + "/v1/configmaps", base + "/v1/cm"} {
		r = call(t, http.MethodGet, url, "")
		wantStatus(t, r, http.StatusOK)
		names := listNames(t, r.body, ns)
		if strings.Join(names, ",") != "cfg,other" {
			t.Fatalf("list %s: %v", url, names)
		}
	}

	// Update with the current resourceVersion, then with the stale one.
	upd := strings.Replace(cmJSON(ns, "cfg", "d29ybGQ="), `"namespace"`, `"resourceVersion":"`+meta.ResourceVersion+`","namespace"`, 1)
	r = call(t, http.MethodPut, coll+"/cfg", upd)
	wantStatus(t, r, http.StatusOK)
	updated := objectMeta(t, r.body)
	if updated.ResourceVersion == meta.ResourceVersion || !updated.CreationTimestamp.Equal(meta.CreationTimestamp) {
		t.Fatalf("updated metadata %+v, created %+v", updated, meta)
	}
	wantStatus(t, call(t, http.MethodPut, coll+"/cfg", upd), http.StatusConflict)
	r = call(t, http.MethodGet, coll+"/cfg/definition", "")
	if string(r.body) != upd {
		t.Fatalf("definition after update %q", r.body)
	}
	wantStatus(t, call(t, http.MethodPut, coll+"/missing", cmJSON(ns, "missing", "eA==")), http.StatusNotFound)

	// Delete: stale precondition, then current, then gone.
	wantStatus(t, call(t, http.MethodDelete, coll+"/cfg?resourceVersion="+meta.ResourceVersion, ""), http.StatusConflict)
	r = call(t, http.MethodDelete, coll+"/cfg?resourceVersion="+updated.ResourceVersion, "")
	wantStatus(t, r, http.StatusOK)
	if got := objectMeta(t, r.body); got.Name != "cfg" {
		t.Fatalf("deleted object %s", r.body)
	}
	wantStatus(t, call(t, http.MethodDelete, coll+"/other", ""), http.StatusOK)
	wantStatus(t, call(t, http.MethodGet, coll+"/cfg", ""), http.StatusNotFound)
	wantStatus(t, call(t, http.MethodGet, coll+"/cfg/definition", ""), http.StatusNotFound)
	wantStatus(t, call(t, http.MethodDelete, coll+"/cfg", ""), http.StatusNotFound)

	// A process, to cover another kind.
	wantStatus(t, call(t, http.MethodPost, base+"/v1/namespaces/"+ns+"/processes", procJSON(ns, "web", 1)), http.StatusCreated)
	r = call(t, http.MethodGet, base+"/v1/namespaces/"+ns+"/processes/web", "")
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), `"startCmd":"./web"`) {
		t.Fatalf("process %s", r.body)
	}
}

func listNames(t *testing.T, body []byte, ns string) []string {
	t.Helper()
	var list struct {
		Kind            string            `json:"kind"`
		ResourceVersion string            `json:"resourceVersion"`
		Items           []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "List" || list.ResourceVersion == "" || list.Items == nil {
		t.Fatalf("list envelope %s", body)
	}
	names := []string{}
	for _, it := range list.Items {
		m := objectMeta(t, it)
		if m.Namespace == ns {
			names = append(names, m.Name)
		}
	}
	return names
}

func TestErrors(t *testing.T) {
	base := newTestServer(t, Config{MaxBodyBytes: 4096})
	ns := "errs"
	coll := base + "/v1/namespaces/" + ns + "/configmaps"
	wantStatus(t, call(t, http.MethodPost, coll, cmJSON(ns, "exists", "eA==")), http.StatusCreated)

	tests := []struct {
		name   string
		method string
		url    string
		body   string
		code   int
		field  string // a detail that must be present
	}{
		{"kind mismatch", "POST", base + "/v1/namespaces/errs/processes", cmJSON(ns, "a", "eA=="), 400, "kind"},
		{"namespace mismatch", "POST", coll, cmJSON("elsewhere", "a", "eA=="), 400, "metadata.namespace"},
		{"default namespace mismatch", "POST", coll, `{"apiVersion":"v4","kind":"configmap","metadata":{"name":"a"},"datas":{}}`, 400, "metadata.namespace"},
		{"name mismatch", "PUT", coll + "/exists", cmJSON(ns, "other", "eA=="), 400, "metadata.name"},
		{"unreadable body", "POST", coll, "{ this is not", 400, ""},
		{"unknown field", "POST", coll + "?validate=strict", strings.TrimSuffix(cmJSON(ns, "a", "eA=="), "}") + `,"bogus":1}`, 422, "bogus"},
		{"bad validate", "POST", coll + "?validate=true", cmJSON(ns, "a", "eA=="), 400, "validate"},
		{"too large", "POST", coll, strings.Repeat(" ", 5000) + cmJSON(ns, "a", "eA=="), 413, ""},
		{"unknown kind", "GET", base + "/v1/namespaces/errs/widgets", "", 404, ""},
		{"unknown kind all namespaces", "GET", base + "/v1/widgets", "", 404, ""},
		{"unknown object", "GET", coll + "/nope", "", 404, ""},
		{"unknown route", "GET", base + "/v2/things", "", 404, ""},
		{"method not allowed", "PATCH", coll + "/exists", "", 405, ""},
		{"get on apply", "GET", base + "/v1/apply", "", 405, ""},
		{"already exists", "POST", coll, cmJSON(ns, "exists", "eA=="), 409, ""},
		{"bad watch parameter", "GET", coll + "?watch=maybe", "", 400, ""},
		{"bad watch resourceVersion", "GET", coll + "?watch=true&resourceVersion=x", "", 400, ""},
		{"bad delete resourceVersion", "DELETE", coll + "/exists?resourceVersion=-3", "", 400, ""},
		{"bad event kind", "GET", base + "/v1/events?kind=widget", "", 400, ""},
		{"empty body", "POST", coll, "", 400, ""},
		{"escaped slash in name", "GET", coll + "/a%2Fb", "", 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, tt.method, tt.url, tt.body)
			wantStatus(t, r, tt.code)
			if tt.field == "" {
				return
			}
			e := decodeError(t, r)
			for _, d := range e.Details {
				if strings.Contains(d.Field, tt.field) {
					return
				}
			}
			t.Fatalf("no detail for field %q in %+v", tt.field, e)
		})
	}
	if r := call(t, "PATCH", coll+"/exists", ""); r.header.Get("Allow") == "" {
		t.Error("405 without an Allow header")
	}
}
