package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func volumeJSON(name string, spec map[string]any) string {
	s := map[string]any{"plugin": "hostpath.csi.k8s.io", "capacity": map[string]any{"min": "1G"}}
	for k, v := range spec {
		s[k] = v
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": "v4", "kind": "volume",
		"metadata": map[string]any{"name": name, "namespace": "nt"}, "spec": s,
		"status": map[string]any{"phase": "Available", "externalID": "forged"}})
	return string(b)
}

// A volume is stored, listed, read and deleted like any namespaced kind; what its writer
// sends as status is dropped.
func TestVolumeCRUD(t *testing.T) {
	url := newTestServer(t, Config{})
	tenant := tokenWithPolicy(t, url, tenantNT, "tenant", "")
	base := url + "/v1/namespaces/nt/volumes"
	wantStatus(t, callAs(t, "", http.MethodPost, base, volumeJSON("data", nil), tenant), http.StatusCreated)
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", volumeJSON("logs", map[string]any{"accessMode": "multi-node-reader-only"}), tenant), http.StatusOK)

	r := callAs(t, "", http.MethodGet, base+"/data", "", tenant)
	wantStatus(t, r, http.StatusOK)
	var v v4.CSIVolume
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatal(err)
	}
	if v.Spec.AccessMode != v4.AccessSingleNodeWriter || v.Spec.AttachmentMode != v4.AttachFileSystem || v.Status.ExternalID != "" {
		t.Fatalf("stored volume %+v", v)
	}
	r = callAs(t, "", http.MethodGet, base, "", tenant)
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), `"data"`) || !strings.Contains(string(r.body), `"logs"`) {
		t.Fatalf("list: %s", r.body)
	}
	wantStatus(t, callAs(t, "", http.MethodDelete, base+"/data", "", tenant), http.StatusOK)
	wantStatus(t, callAs(t, "", http.MethodGet, base+"/data", "", tenant), http.StatusNotFound)
	wantStatus(t, callAs(t, "", http.MethodGet, url+"/v1/namespaces/other/volumes/logs", "", tenant), http.StatusForbidden)
}

// A namespace's token cannot use a volume to hand a plugin more than it may: an oversized
// or path-like field is a 422 naming it, a secret it may not read a 403; nothing is stored.
func TestTenantVolumeFieldsAtAdmission(t *testing.T) {
	url := newTestServer(t, Config{})
	tenant := tokenWithPolicy(t, url, tenantNT, "tenant", "")
	secretReader := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: secrets}
rules:
  - {namespaces: [nt], kinds: [volume, secret], verbs: [read, write]}
`, "secrets", "")
	params := map[string]any{}
	for i := range 65 {
		params[strings.Repeat("k", i+1)] = "v"
	}
	for _, tc := range []struct {
		name, doc string
		code      int
		field     string
	}{
		{"a name with a path", strings.Replace(volumeJSON("x", nil), `"name":"x"`, `"name":"../x"`, 1), http.StatusUnprocessableEntity, "metadata.name"},
		{"a plugin with a path", volumeJSON("v", map[string]any{"plugin": "../../run/berth/agent"}), http.StatusUnprocessableEntity, "spec.plugin"},
		{"too many parameters", volumeJSON("v", map[string]any{"parameters": params}), http.StatusUnprocessableEntity, "spec.parameters"},
		{"a huge parameter", volumeJSON("v", map[string]any{"parameters": map[string]any{"k": strings.Repeat("v", 5000)}}), http.StatusUnprocessableEntity, "spec.parameters.k"},
		{"a secret in another namespace", volumeJSON("v", map[string]any{"secrets": map[string]any{"name": "../other/creds"}}), http.StatusUnprocessableEntity, "spec.secrets.name"},
		{"a mount flag that weakens the node", volumeJSON("v", map[string]any{"mountOptions": map[string]any{"flags": []string{"suid"}}}), http.StatusUnprocessableEntity, "spec.mountOptions.flags[0]"},
		{"a secret it may not read", volumeJSON("v", map[string]any{"secrets": map[string]any{"name": "creds"}}), http.StatusForbidden, "spec.secrets.name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := callAs(t, "", http.MethodPost, url+"/v1/namespaces/nt/volumes", tc.doc, tenant)
			wantStatus(t, r, tc.code)
			found := false
			for _, d := range decodeError(t, r).Details {
				found = found || d.Field == tc.field
			}
			if !found {
				t.Fatalf("details %+v, want %s", decodeError(t, r).Details, tc.field)
			}
			wantStatus(t, callAs(t, "", http.MethodGet, url+"/v1/namespaces/nt/volumes/v", "", tenant), http.StatusNotFound)
		})
	}
	ok := volumeJSON("v", map[string]any{"secrets": map[string]any{"name": "creds"}})
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/namespaces/nt/volumes", ok, secretReader), http.StatusCreated)
}
