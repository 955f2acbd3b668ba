package server

import (
	"net/http"
	"strings"
	"testing"
)

// csiApp is podVolumeApp's application claiming volume objects from pod volumes "v" (and
// "w" when source2 is set), "v" mounted by web at /data.
func csiApp(source, source2 string) string {
	doc := podVolumeApp(`"csi":`+source, "/data")
	if source2 != "" {
		doc = strings.Replace(doc, `"volumes":[{"name":"v",`, `"volumes":[{"name":"w","csi":`+source2+`},{"name":"v",`, 1)
	}
	return doc
}

// A namespace's token cannot claim another namespace's volume, a volume it may not read,
// one volume twice, or write to a volume that only reads: each is refused with the field
// named, and nothing is stored.
func TestTenantCSIClaimsAtAdmission(t *testing.T) {
	url := newTestServer(t, Config{})
	tenant := tokenWithPolicy(t, url, tenantNT, "tenant", "")
	appsOnly := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: apps}
rules:
  - {namespaces: [nt], kinds: [application], verbs: [read, write]}
`, "apps", "")
	vols := url + "/v1/namespaces/nt/volumes"
	wantStatus(t, callAs(t, "", http.MethodPost, vols, volumeJSON("data", nil), tenant), http.StatusCreated)
	wantStatus(t, callAs(t, "", http.MethodPost, vols, volumeJSON("shared", map[string]any{"accessMode": "multi-node-reader-only"}), tenant), http.StatusCreated)
	wantStatus(t, callAs(t, "", http.MethodPost, vols, volumeJSON("one", map[string]any{"accessMode": "single-node-reader-only"}), tenant), http.StatusCreated)
	const v0 = "spec.template.spec.volumes[0]"
	apps := url + "/v1/namespaces/nt/applications"
	for _, tc := range []struct {
		name, token, url, doc string
		code                  int
		field, msg            string
	}{
		{"another namespace's volume", tenant, apps, csiApp(`{"volume":"other/data"}`, ""), http.StatusUnprocessableEntity, v0 + ".csi.volume", "letters"},
		{"a volume up the tree", tenant, apps, csiApp(`{"volume":"../other/data"}`, ""), http.StatusUnprocessableEntity, v0 + ".csi.volume", "letters"},
		{"a volume it may not read", appsOnly, apps, csiApp(`{"volume":"data"}`, ""), http.StatusForbidden, v0 + ".csi.volume", "read volume"},
		{"a volume it may not read, not yet created", appsOnly, apps, csiApp(`{"volume":"later"}`, ""), http.StatusForbidden, v0 + ".csi.volume", "read volume"},
		{"a write claim of a reader-only volume", tenant, apps, csiApp(`{"volume":"shared"}`, ""), http.StatusUnprocessableEntity, v0 + ".csi.readOnly", "multi-node-reader-only"},
		{"a write claim of a single-node reader", tenant, apps, csiApp(`{"volume":"one","readOnly":false}`, ""), http.StatusUnprocessableEntity, v0 + ".csi.readOnly", "must be readOnly"},
		{"one volume claimed twice", tenant, apps, csiApp(`{"volume":"data"}`, `{"volume":"data","readOnly":true}`), http.StatusUnprocessableEntity,
			"spec.template.spec.volumes[1].csi.volume", "claimed by volumes[0]"},
		{"a reader-only volume of the same apply", tenant, url + "/v1/apply",
			volumeJSON("fresh", map[string]any{"accessMode": "multi-node-reader-only"}) + "\n" + csiApp(`{"volume":"fresh"}`, ""),
			http.StatusUnprocessableEntity, v0 + ".csi.readOnly", "multi-node-reader-only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := callAs(t, "", http.MethodPost, tc.url, tc.doc, tc.token)
			wantStatus(t, r, tc.code)
			found := false
			for _, d := range decodeError(t, r).Details {
				found = found || d.Field == tc.field && strings.Contains(d.Message, tc.msg)
			}
			if !found {
				t.Fatalf("details %+v, want %s: ...%s...", decodeError(t, r).Details, tc.field, tc.msg)
			}
			wantStatus(t, callAs(t, "", http.MethodGet, apps+"/web", "", tenant), http.StatusNotFound)
			wantStatus(t, callAs(t, "", http.MethodGet, vols+"/fresh", "", tenant), http.StatusNotFound)
		})
	}
	// What it may do: read a reader-only volume, write one that takes writers, claim one
	// not created yet (its instances wait for it).
	for _, doc := range []string{csiApp(`{"volume":"shared","readOnly":true}`, ""), csiApp(`{"volume":"data"}`, `{"volume":"later"}`)} {
		wantStatus(t, callAs(t, "", http.MethodPost, apps, doc, tenant), http.StatusCreated)
		wantStatus(t, callAs(t, "", http.MethodDelete, apps+"/web", "", tenant), http.StatusOK)
	}
}
