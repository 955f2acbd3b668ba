package server

import (
	"net/http"
	"strings"
	"testing"
)

// A csiPlugin volume makes a task group a CSI plugin of its node, which gets volumes'
// secrets and the agent's data dir: a token limited to its namespace needs the
// csi-plugin privilege to write a pod with one, and a name that would leave the plugin
// dir is refused before any privilege.
func TestCSIPluginPrivilege(t *testing.T) {
	url := newTestServer(t, Config{})
	tenant := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: tenant}
rules:
  - {namespaces: ["csi"], kinds: ["*"], verbs: [read, write]}
`, "tenant", "")
	app := `{"apiVersion":"v4","kind":"application","metadata":{"name":"plugin","namespace":"csi"},"spec":{"instance":1,"template":{"spec":{` +
		`"networkMode":"NONE","containers":[{"image":"busybox","volumes":[{"volume":{"mountPath":"/csi","podVolume":"sock"}}]}],` +
		`"volumes":[{"name":"sock","csiPlugin":{"name":"hostpath.csi.k8s.io"}}]}}}}`
	const field = "spec.template.spec.volumes[0].csiPlugin"
	r := callAs(t, "", http.MethodPost, url+"/v1/apply", app, tenant)
	wantStatus(t, r, http.StatusForbidden)
	e := decodeError(t, r)
	if len(e.Details) != 1 || e.Details[0].Field != field || !strings.Contains(e.Message, `privilege "csi-plugin"`) {
		t.Fatalf("%+v, want %s and csi-plugin", e, field)
	}
	storage := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: storage}
rules:
  - {namespaces: ["csi"], kinds: [application], verbs: [write], privileges: [csi-plugin]}
`, "storage", "")
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", app, storage), http.StatusOK)

	for _, name := range []string{"../../../etc", "a/b", ".", ""} {
		bad := strings.Replace(app, `"hostpath.csi.k8s.io"`, `"`+name+`"`, 1)
		r = callAs(t, "", http.MethodPost, url+"/v1/apply", bad, storage)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if e := decodeError(t, r); len(e.Details) == 0 || e.Details[0].Field != field+".name" {
			t.Fatalf("%q: %+v, want %s.name", name, e, field)
		}
	}
}
