package server

import (
	"net/http"
	"strings"
	"testing"
)

// A FlexVolume runs its driver as root on the node with the spec's options: a token
// limited to its namespace needs the flex-volume privilege to write a pod with one.
func TestFlexVolumePrivilege(t *testing.T) {
	url := newTestServer(t, Config{})
	tenant := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: tenant}
rules:
  - {namespaces: ["fv"], kinds: ["*"], verbs: [read, write]}
`, "tenant", "")
	app := `{"apiVersion":"v4","kind":"application","metadata":{"name":"app","namespace":"fv"},"spec":{"instance":1,"template":{"spec":{` +
		`"networkMode":"NONE","containers":[{"image":"busybox","volumes":[{"volume":{"mountPath":"/data","podVolume":"nfs"}}]}],` +
		`"volumes":[{"name":"nfs","flexVolume":{"driver":"acme/nfs","options":{"server":"10.0.0.1"}}}]}}}}`
	const field = "spec.template.spec.volumes[0].flexVolume"
	r := callAs(t, "", http.MethodPost, url+"/v1/apply", app, tenant)
	wantStatus(t, r, http.StatusForbidden)
	e := decodeError(t, r)
	if len(e.Details) != 1 || e.Details[0].Field != field || !strings.Contains(e.Message, `privilege "flex-volume"`) {
		t.Fatalf("%+v, want %s and flex-volume", e, field)
	}
	storage := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: storage}
rules:
  - {namespaces: ["fv"], kinds: [application], verbs: [write], privileges: [flex-volume]}
`, "storage", "")
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", app, storage), http.StatusOK)

	// A driver name that would leave the plugin dir is refused before any privilege.
	bad := strings.Replace(app, `"acme/nfs"`, `"../../../bin/sh"`, 1)
	r = call(t, http.MethodPost, url+"/v1/apply", bad)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if e := decodeError(t, r); len(e.Details) == 0 || e.Details[0].Field != field+".driver" {
		t.Fatalf("%+v, want %s.driver", e, field)
	}
}
