package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// registrarNT may write volumes in nt with the external-volume privilege.
const registrarNT = `kind: acl-policy
metadata: {name: registrar}
rules:
  - {namespaces: [nt], kinds: [volume], verbs: [read, write], privileges: [external-volume]}
`

// Registering storage by its ID is a privilege, and an ID another volume object of the
// plugin has (another namespace's above all) is refused without naming its holder.
func TestVolumeExternalIDAdmission(t *testing.T) {
	url := newTestServer(t, Config{})
	tenant := tokenWithPolicy(t, url, tenantNT, "tenant", "")
	registrar := tokenWithPolicy(t, url, registrarNT, "registrar", "")
	base := url + "/v1/namespaces/nt/volumes"
	ext := func(name, id string) string {
		return volumeJSON(name, map[string]any{"externalID": id, "capacity": nil})
	}

	r := callAs(t, "", http.MethodPost, base, ext("reg1", "vol-mine"), tenant)
	wantStatus(t, r, http.StatusForbidden)
	if !strings.Contains(string(r.body), "spec.externalID") || !strings.Contains(string(r.body), "external-volume") {
		t.Errorf("refusal without the privilege: %s", r.body)
	}
	wantStatus(t, callAs(t, "", http.MethodPost, base, ext("reg1", "vol-mine"), registrar), http.StatusCreated)

	// Another namespace's volume, created by berth: its storage ID is in its status.
	other := &v4.CSIVolume{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindVolume},
		Metadata: v4.ObjectMeta{Name: "secret-data", Namespace: "victim"},
		Spec:     v4.VolumeSpec{Plugin: "hostpath.csi.k8s.io", AccessMode: v4.AccessSingleNodeWriter, AttachmentMode: v4.AttachFileSystem},
		Status:   v4.VolumeStatus{Phase: v4.VolumeAvailable, UID: "berth-x", ExternalID: "vol-victim"}}
	if err := testStore.Create(context.Background(), other, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	r = callAs(t, "", http.MethodPost, base, ext("steal", "vol-victim"), registrar)
	wantStatus(t, r, http.StatusConflict)
	if strings.Contains(string(r.body), "victim/") || strings.Contains(string(r.body), "secret-data") {
		t.Errorf("the refusal names another namespace's volume: %s", r.body)
	}
	r = callAs(t, "", http.MethodPost, base, ext("twice", "vol-mine"), registrar)
	wantStatus(t, r, http.StatusConflict)
	if !strings.Contains(string(r.body), "volume reg1") {
		t.Errorf("a second object of the namespace's own storage: %s", r.body)
	}
	// The same ID of another plugin is another volume.
	wantStatus(t, callAs(t, "", http.MethodPost, base,
		volumeJSON("elsewhere", map[string]any{"externalID": "vol-victim", "capacity": nil, "plugin": "nfs.csi.k8s.io"}), registrar), http.StatusCreated)
	for _, name := range []string{"steal", "twice"} {
		wantStatus(t, callAs(t, "", http.MethodGet, base+"/"+name, "", registrar), http.StatusNotFound)
	}
}

// Once the controller has asked the plugin for a volume, what the plugin has is fixed;
// the mount options stay the writer's.
func TestVolumeSpecFixedOnceCreated(t *testing.T) {
	url := newTestServer(t, Config{})
	tenant := tokenWithPolicy(t, url, tenantNT, "tenant", "")
	base := url + "/v1/namespaces/nt/volumes"
	wantStatus(t, callAs(t, "", http.MethodPost, base, volumeJSON("fixed", nil), tenant), http.StatusCreated)
	// Still Pending, never asked: anything may change.
	wantStatus(t, callAs(t, "", http.MethodPut, base+"/fixed", volumeJSON("fixed", map[string]any{"capacity": map[string]any{"min": "2G"}}), tenant), http.StatusOK)

	o, err := testStore.Get(context.Background(), v4.KindVolume, "nt", "fixed")
	if err != nil {
		t.Fatal(err)
	}
	v := o.(*v4.CSIVolume)
	v.Status = v4.VolumeStatus{Phase: v4.VolumeAvailable, UID: "berth-fixed", ExternalID: "vol-fixed"}
	if err := testStore.Update(context.Background(), v, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field string
		spec  map[string]any
	}{
		{"spec.capacity", map[string]any{"capacity": map[string]any{"min": "3G"}}},
		{"spec.plugin", map[string]any{"capacity": map[string]any{"min": "2G"}, "plugin": "other.csi.k8s.io"}},
		{"spec.externalID", map[string]any{"capacity": nil, "externalID": "vol-fixed"}},
		{"spec.accessMode", map[string]any{"capacity": map[string]any{"min": "2G"}, "accessMode": "multi-node-multi-writer"}},
		{"spec.parameters", map[string]any{"capacity": map[string]any{"min": "2G"}, "parameters": map[string]any{"tier": "gold"}}},
	} {
		r := callAs(t, "", http.MethodPut, base+"/fixed", volumeJSON("fixed", tc.spec), tenant)
		if r.code != http.StatusUnprocessableEntity && r.code != http.StatusForbidden || !strings.Contains(string(r.body), tc.field) {
			t.Errorf("changing %s: %d %s", tc.field, r.code, r.body)
		}
	}
	wantStatus(t, callAs(t, "", http.MethodPut, base+"/fixed", volumeJSON("fixed", map[string]any{"capacity": map[string]any{"min": "2G"},
		"mountOptions": map[string]any{"flags": []string{"noatime"}}}), tenant), http.StatusOK)
}
