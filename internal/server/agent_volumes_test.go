package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
	"github.com/berthhq/berth/internal/volumes/volumestest"
)

const claimPlugin = "p.csi"

// volumeNodes stores nodes n1 (the plugin's controller, with publish-unpublish) and n2
// and n3 (the node plugin only).
func volumeNodes(t *testing.T) {
	t.Helper()
	for _, n := range []string{"n1", "n2", "n3"} {
		storetest.CreateNode(t, testStore, n, v4.NodeResources{CPU: 4, MemoryMB: 4096}, func(node *v4.Node) {
			node.Status.CSIPlugins = []v4.CSIPlugin{{Name: claimPlugin, Node: true, Healthy: true, NodeID: "id-" + n,
				Controller: n == "n1", ControllerCapabilities: []string{v4.CSICreateDelete, v4.CSIPublishUnpublish}}}
		})
	}
}

// storeVolume stores an Available volume vt/name of access mode mode, created by berth,
// with the secret creds.
func storeVolume(t *testing.T, name, mode string, edit func(*v4.CSIVolume)) {
	t.Helper()
	v := &v4.CSIVolume{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindVolume},
		Metadata: v4.ObjectMeta{Name: name, Namespace: "vt"},
		Spec: v4.VolumeSpec{Plugin: claimPlugin, AccessMode: mode, AttachmentMode: v4.AttachFileSystem,
			Secrets: &v4.VolumeSecretsRef{Name: "creds"}},
		Status: v4.VolumeStatus{Phase: v4.VolumeAvailable, UID: "berth-" + name, ExternalID: "vol-" + name,
			Context: map[string]string{"k": "v"}}}
	if edit != nil {
		edit(v)
	}
	if err := testStore.Create(context.Background(), v, store.Raw{}); err != nil {
		t.Fatal(err)
	}
}

// claimingTG stores task group vt/name on node with a csi pod volume of volume.
func claimingTG(t *testing.T, name, node, volume string, readOnly bool) {
	t.Helper()
	putTaskGroup(t, "vt", name, node, func(tg *v4.TaskGroup) {
		tg.Spec.Template.Spec.Volumes = []v4.PodVolume{{Name: "data", CSI: &v4.CSIVolumeSource{Volume: volume, ReadOnly: readOnly}}}
	})
}

func claimBody(volume, tg string, readOnly bool) string {
	b, _ := json.Marshal(v4.CSIClaimRequest{Namespace: "vt", Volume: volume, TaskGroup: tg, ReadOnly: readOnly})
	return string(b)
}

// claimAs claims as node's agent, again while the server's node cache has not caught up
// with the nodes (503: no controller yet).
func claimAs(t *testing.T, url, node, volume, tg string, readOnly bool) response {
	t.Helper()
	var r response
	for range 100 {
		if r = callAs(t, node, http.MethodPost, url+"/v1/agent/volumes/claim", claimBody(volume, tg, readOnly), ""); r.code != http.StatusServiceUnavailable {
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	return r
}

func storedVolume(t *testing.T, name string) *v4.CSIVolume {
	t.Helper()
	v, err := store.Typed[*v4.CSIVolume](testStore, v4.KindVolume).Get(context.Background(), "vt", name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func wantMessage(t *testing.T, r response, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(string(r.body), p) {
			t.Fatalf("answer %d %s does not say %q", r.code, r.body, p)
		}
	}
}

// A task group's node claims a volume its pod names: published to the node through the
// controller's node, recorded, answered with what the node's calls need; again is the
// same claim, published once. Released, it is unpublished and gone; releasing again is
// fine. Another node can neither claim nor release it.
func TestAgentVolumeClaimAndRelease(t *testing.T) {
	fake := &volumestest.Fake{}
	url := newTestServer(t, Config{VolumeController: fake})
	volumeNodes(t)
	sec := &v4.Secret{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindSecret}, Metadata: v4.ObjectMeta{Name: "creds", Namespace: "vt"},
		Datas: map[string]v4.SecretData{"token": {Content: base64.StdEncoding.EncodeToString([]byte("s3cret"))}}}
	if err := testStore.Create(context.Background(), sec, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	storeVolume(t, "data", v4.AccessSingleNodeWriter, nil)
	claimingTG(t, "web-1", "n2", "data", false)

	wantStatus(t, claimAs(t, url, "n3", "data", "web-1", false), http.StatusForbidden) // not n3's task group
	for range 2 {
		r := claimAs(t, url, "n2", "data", "web-1", false)
		wantStatus(t, r, http.StatusOK)
		var g v4.CSIClaimGrant
		if err := json.Unmarshal(r.body, &g); err != nil {
			t.Fatal(err)
		}
		if g.Plugin != claimPlugin || g.ExternalID != "vol-data" || g.Secrets["token"] != "s3cret" || g.Context["k"] != "v" ||
			g.PublishContext["device"] != "/dev/fake-id-n2" || g.AccessMode != v4.AccessSingleNodeWriter {
			t.Fatalf("grant %+v", g)
		}
	}
	pubs := fake.Calls(v4.CSIOpPublish)
	if len(pubs) != 1 || pubs[0].Node != "n1" || pubs[0].Req.NodeID != "id-n2" || pubs[0].Req.VolumeID != "vol-data" || pubs[0].Req.ReadOnly {
		t.Fatalf("publish calls %+v", pubs)
	}
	v := storedVolume(t, "data")
	if len(v.Status.Claims) != 1 || !reflect.DeepEqual(v.Status.Claims[0], v4.VolumeClaim{TaskGroup: "web-1", Node: "n2", Mode: "write", NodeID: "id-n2",
		PublishContext: map[string]string{"device": "/dev/fake-id-n2"}}) || strings.Contains(fmt.Sprint(v), "s3cret") {
		t.Fatalf("claims %+v", v.Status.Claims)
	}

	// The claimed volume cannot be deleted.
	r := callAs(t, "", http.MethodDelete, url+"/v1/namespaces/vt/volumes/data", "", adminToken)
	wantStatus(t, r, http.StatusConflict)
	wantMessage(t, r, "web-1 on node n2")

	release := func(node string) response {
		return callAs(t, node, http.MethodPost, url+"/v1/agent/volumes/release", claimBody("data", "web-1", false), "")
	}
	wantStatus(t, release("n3"), http.StatusForbidden)
	for range 2 {
		if r := release("n2"); r.code != http.StatusNoContent {
			t.Fatalf("release: %d %s", r.code, r.body)
		}
	}
	if un := fake.Calls(v4.CSIOpUnpublish); len(un) != 1 || un[0].Req.NodeID != "id-n2" || un[0].Req.VolumeID != "vol-data" {
		t.Fatalf("unpublish calls %+v", un)
	}
	if v := storedVolume(t, "data"); len(v.Status.Claims) != 0 {
		t.Fatalf("claims after release %+v", v.Status.Claims)
	}

	// Released, the volume berth created is deleted through its plugin: Deleting.
	r = callAs(t, "", http.MethodDelete, url+"/v1/namespaces/vt/volumes/data", "", adminToken)
	wantStatus(t, r, http.StatusAccepted)
	if v := storedVolume(t, "data"); v.Status.Phase != v4.VolumeDeleting {
		t.Fatalf("phase %s", v.Status.Phase)
	}
	// A registered one is removed at once.
	storeVolume(t, "old", v4.AccessSingleNodeWriter, func(v *v4.CSIVolume) { v.Spec.ExternalID = "vol-old" })
	wantStatus(t, callAs(t, "", http.MethodDelete, url+"/v1/namespaces/vt/volumes/old", "", adminToken), http.StatusOK)
}

// What a claim is refused for: an unknown volume or task group, a task group that does
// not name the volume (or names it read-only), a volume not Available, and access-mode
// conflicts, named by their holder.
func TestAgentVolumeClaimRefused(t *testing.T) {
	fake := &volumestest.Fake{}
	url := newTestServer(t, Config{VolumeController: fake})
	volumeNodes(t)
	storeVolume(t, "one-node", v4.AccessSingleNodeWriter, func(v *v4.CSIVolume) { v.Spec.Secrets = nil })
	storeVolume(t, "one-writer", v4.AccessMultiNodeSingleWriter, func(v *v4.CSIVolume) { v.Spec.Secrets = nil })
	storeVolume(t, "readers", v4.AccessMultiNodeReader, func(v *v4.CSIVolume) { v.Spec.Secrets = nil })
	storeVolume(t, "pending", v4.AccessSingleNodeWriter, func(v *v4.CSIVolume) {
		v.Spec.Secrets, v.Status = nil, v4.VolumeStatus{Phase: v4.VolumePending, Message: "no controller"}
	})
	claimingTG(t, "a", "n2", "one-node", false)
	claimingTG(t, "b", "n3", "one-node", false)
	claimingTG(t, "w1", "n2", "one-writer", false)
	claimingTG(t, "w2", "n3", "one-writer", false)
	claimingTG(t, "r1", "n3", "one-writer", true)
	claimingTG(t, "rw", "n2", "readers", false)
	claimingTG(t, "p", "n2", "pending", false)
	claimingTG(t, "ghost", "n2", "nope", false)
	wantStatus(t, claimAs(t, url, "n2", "one-node", "a", false), http.StatusOK)
	wantStatus(t, claimAs(t, url, "n2", "one-writer", "w1", false), http.StatusOK)

	for _, tc := range []struct {
		name, node, volume, tg string
		readOnly               bool
		code                   int
		says                   []string
	}{
		{"unknown volume", "n2", "nope", "ghost", false, http.StatusNotFound, []string{"volume vt/nope not found"}},
		{"a volume its task group does not name", "n2", "nope", "a", false, http.StatusForbidden, []string{"task group vt/a has no csi pod volume of volume nope"}},
		{"unknown task group", "n2", "one-node", "nope", false, http.StatusNotFound, []string{"task group vt/nope not found"}},
		{"another node's task group", "n3", "one-node", "a", false, http.StatusForbidden, []string{"not bound to node n3"}},
		{"a task group not naming it", "n2", "readers", "a", false, http.StatusForbidden, []string{"no csi pod volume of volume readers"}},
		{"read-only in the pod, not in the claim", "n3", "one-writer", "r1", false, http.StatusForbidden, []string{"readOnly true, not false"}},
		{"not Available", "n2", "pending", "p", false, http.StatusUnprocessableEntity, []string{"Pending", "no controller"}},
		{"a second node", "n3", "one-node", "b", false, http.StatusConflict, []string{"one node", "task group a on node n2"}},
		{"a second writer", "n3", "one-writer", "w2", false, http.StatusConflict, []string{"one writer", "task group w1 on node n2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := claimAs(t, url, tc.node, tc.volume, tc.tg, tc.readOnly)
			wantStatus(t, r, tc.code)
			wantMessage(t, r, tc.says...)
		})
	}
	// A reader beside the one writer is fine, and so is a release of nothing claimed.
	wantStatus(t, claimAs(t, url, "n3", "one-writer", "r1", true), http.StatusOK)
	wantStatus(t, callAs(t, "n3", http.MethodPost, url+"/v1/agent/volumes/release", claimBody("one-writer", "w2", false), ""), http.StatusNoContent)
}

// A write claim of a reader-only volume is a conflict even when its pod says so.
func TestAgentVolumeClaimReaderOnly(t *testing.T) {
	url := newTestServer(t, Config{VolumeController: &volumestest.Fake{}})
	volumeNodes(t)
	storeVolume(t, "readers", v4.AccessMultiNodeReader, func(v *v4.CSIVolume) { v.Spec.Secrets = nil })
	claimingTG(t, "rw", "n2", "readers", false)
	r := claimAs(t, url, "n2", "readers", "rw", false)
	wantStatus(t, r, http.StatusConflict)
	wantMessage(t, r, "read-only claims only")
}
