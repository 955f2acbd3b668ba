package server

import (
	"net/http"
	"strings"
	"testing"
)

// A JSON body that gives one key twice is refused naming the key's path, and writes
// nothing (docs/api.md): with 422 on the document routes read with ?validate=strict
// (the default reads them as BCS did, validate_test.go), with 400 on every other route
// that takes JSON.
func TestDuplicateJSONKeysRefused(t *testing.T) {
	base := newTestServer(t, Config{})
	wantStatus(t, call(t, http.MethodPost, base+"/v1/nodes",
		`{"kind":"node","metadata":{"name":"n1","labels":{"a":"1"}},"spec":{"capacity":{"cpu":2}}}`), http.StatusCreated)
	wantStatus(t, call(t, http.MethodPost, base+"/v1/namespaces/dup/configmaps", cmJSON("dup", "kept", "eA==")), http.StatusCreated)

	kindTwice := `{"apiVersion":"v4","kind":"configmap","kind":"secret","metadata":{"name":"s","namespace":"dup"},"datas":{"k":{"content":"eA=="}}}`
	tests := []struct {
		name, method, path, body, want string
	}{
		{"apply", http.MethodPost, "/v1/apply?validate=strict", kindTwice, `kind: duplicate key "kind"`},
		{"apply stream", http.MethodPost, "/v1/apply?validate=strict", cmJSON("dup", "a", "eA==") + "\n" +
			strings.Replace(cmJSON("dup", "b", "eA=="), `"name":"b"`, `"name":"b","name":"c"`, 1),
			`documents[1].metadata.name: duplicate key "name"`},
		{"create", http.MethodPost, "/v1/namespaces/dup/secrets?validate=strict", kindTwice, `kind: duplicate key "kind"`},
		{"replace", http.MethodPut, "/v1/namespaces/dup/configmaps/kept?validate=STRICT",
			strings.Replace(cmJSON("dup", "kept", "eA=="), `"content":"eA=="`, `"content":"eA==","content":"eQ=="`, 1),
			`datas.k.content: duplicate key "content"`},
		{"plan", http.MethodPost, "/v1/plan?validate=strict", kindTwice, `kind: duplicate key "kind"`},
		{"node register", http.MethodPost, "/v1/nodes",
			`{"kind":"node","metadata":{"name":"n2","name":"n3"}}`, `metadata.name: duplicate key "name"`},
		{"node replace", http.MethodPut, "/v1/nodes/n1",
			`{"kind":"node","metadata":{"name":"n1"},"spec":{"capacity":{"cpu":2,"cpu":4}}}`, `spec.capacity.cpu: duplicate key "cpu"`},
		{"node merge patch", http.MethodPatch, "/v1/nodes/n1",
			`{"metadata":{"labels":{"a":"2","a":null}}}`, `metadata.labels.a: duplicate key "a"`},
		{"engine", http.MethodPut, "/v1/engine",
			`{"maintenance":true,"reason":"x","maintenance":false}`, `maintenance: duplicate key "maintenance"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, tc.method, base+tc.path, tc.body)
			if strings.Contains(strings.ToLower(tc.path), "validate=strict") {
				wantStatus(t, r, http.StatusUnprocessableEntity)
				e := decodeError(t, r)
				if len(e.Details) != 1 || !strings.Contains(e.Details[0].Field+": "+e.Details[0].Message, tc.want) {
					t.Fatalf("details %+v, want %q", e.Details, tc.want)
				}
				return
			}
			wantStatus(t, r, http.StatusBadRequest)
			if e := decodeError(t, r); !strings.Contains(e.Message, tc.want) {
				t.Fatalf("message %q, want %q", e.Message, tc.want)
			}
		})
	}
	for _, p := range []string{"/v1/namespaces/dup/secrets/s", "/v1/namespaces/dup/configmaps/s",
		"/v1/namespaces/dup/configmaps/a", "/v1/nodes/n2", "/v1/nodes/n3"} {
		wantStatus(t, call(t, http.MethodGet, base+p, ""), http.StatusNotFound)
	}
	r := call(t, http.MethodGet, base+"/v1/nodes/n1", "")
	if n := decodeNodeBody(t, r.body); n.Metadata.Labels["a"] != "1" || n.Spec.Capacity.CPU != 2 {
		t.Fatalf("node changed by a refused body: %s", r.body)
	}
	if r := call(t, http.MethodGet, base+"/v1/namespaces/dup/configmaps/kept/definition", ""); string(r.body) != cmJSON("dup", "kept", "eA==") {
		t.Fatalf("configmap changed by a refused body: %s", r.body)
	}
}
