package server

import (
	"net/http"
	"strings"
	"testing"
)

// keysOnly lists and watches secrets with their keys and without their values, for a
// token limited to one namespace as for the management token; other namespaces, and a
// token that may not read secrets, stay refused, and the parameter is refused on other kinds and when it is not a boolean.
func TestSecretsKeysOnly(t *testing.T) {
	url := newTestServer(t, Config{})
	const value = "c2VjcmV0LXZhbHVl" // "secret-value"
	secret := func(ns, name string) string {
		return `{"apiVersion":"v4","kind":"secret","metadata":{"name":"` + name + `","namespace":"` + ns + `"},"datas":{"password":{"content":"` + value + `"},"cert":{"path":"/etc/tls","content":"` + value + `"}}}`
	}
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/ko/secrets", secret("ko", "db")), http.StatusCreated)
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/other/secrets", secret("other", "db")), http.StatusCreated)
	tenant := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: ko-reader}
rules:
  - {namespaces: ["ko"], kinds: ["*", secret], verbs: [read]}
`, "ko-reader", "")
	// Keys are a secret read too: a token that may read everything else does not get them.
	noSecrets := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: ko-viewer}
rules:
  - {namespaces: ["ko"], kinds: ["*"], verbs: [read]}
`, "ko-viewer", "")
	wantStatus(t, callAs(t, "", http.MethodGet, url+"/v1/namespaces/ko/secrets?keysOnly=true", "", noSecrets), http.StatusForbidden)

	for _, who := range []string{"", tenant} {
		r := callAs(t, "", http.MethodGet, url+"/v1/namespaces/ko/secrets?keysOnly=true", "", who)
		wantStatus(t, r, http.StatusOK)
		body := string(r.body)
		if strings.Contains(body, value) || !strings.Contains(body, `"password"`) || !strings.Contains(body, `"/etc/tls"`) {
			t.Errorf("keysOnly list: %s, want the keys and the path without the value", body)
		}
	}
	// Without keysOnly the values are there, as before.
	if r := call(t, http.MethodGet, url+"/v1/namespaces/ko/secrets?limit=5", ""); !strings.Contains(string(r.body), value) {
		t.Errorf("list: %s, want the values", r.body)
	}
	wantStatus(t, callAs(t, "", http.MethodGet, url+"/v1/namespaces/other/secrets?keysOnly=true", "", tenant), http.StatusForbidden)
	wantStatus(t, callAs(t, "", http.MethodGet, url+"/v1/secrets?keysOnly=true", "", tenant), http.StatusForbidden)
	for _, bad := range []struct{ path, want string }{
		{"/v1/namespaces/ko/configmaps?keysOnly=true", "keysOnly is for secrets only"},
		{"/v1/namespaces/ko/secrets?keysOnly=maybe", "keysOnly"},
		{"/v1/namespaces/ko/configmaps?watch=true&keysOnly=true", "keysOnly is for secrets only"},
	} {
		r := callAs(t, "", http.MethodGet, url+bad.path, "", tenant)
		wantStatus(t, r, http.StatusBadRequest)
		if !strings.Contains(string(r.body), bad.want) {
			t.Errorf("%s: %s, want %q", bad.path, r.body, bad.want)
		}
	}

	// A watch with the values and one without, of the same change: each gets its own.
	full := openStream(t, url+"/v1/namespaces/ko/secrets?watch=true")
	nextLine(t, full) // the secret written above
	w := openStream(t, url+"/v1/namespaces/ko/secrets?watch=true&keysOnly=true")
	wantStatus(t, call(t, http.MethodPost, url+"/v1/namespaces/ko/secrets", secret("ko", "api")), http.StatusCreated)
	l := nextLine(t, w)
	if l.Type != "ADDED" || strings.Contains(string(l.Object), value) || !strings.Contains(string(l.Object), `"password"`) {
		t.Errorf("keysOnly watch: %s %s, want the keys without the value", l.Type, l.Object)
	}
	if l := nextLine(t, full); l.Type != "ADDED" || !strings.Contains(string(l.Object), value) {
		t.Errorf("watch: %s %s, want the values", l.Type, l.Object)
	}
}
