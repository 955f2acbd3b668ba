package controller

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/volumes"
	"github.com/berthhq/berth/internal/volumes/volumestest"
)

const volPlugin = "p.csi"

// withPlugin gives a node plugin volPlugin, its controller with caps.
func withPlugin(controller bool, caps ...string) func(*v4.Node) {
	return func(n *v4.Node) {
		n.Status.CSIPlugins = []v4.CSIPlugin{{Name: volPlugin, Controller: controller, Node: true, Healthy: true,
			NodeID: "id-" + n.Metadata.Name, ControllerCapabilities: caps}}
	}
}

// startVolumes runs a volume controller making its calls on fake, with nodes set up by
// the changes given per node.
func startVolumes(t *testing.T, fake *volumestest.Fake, nodes map[string]func(*v4.Node)) *env {
	t.Helper()
	e := startEnv(t, func(e *env) runner {
		o := e.opts()
		o.Volumes = fake
		return NewVolumeController(testStore, o)
	})
	for n, change := range nodes {
		e.node(n, change)
	}
	return e
}

// putVolume stores volume name of namespace vols as the API would, with status.
func putVolume(t *testing.T, name string, edit func(*v4.CSIVolume)) {
	t.Helper()
	v := &v4.CSIVolume{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindVolume},
		Metadata: v4.ObjectMeta{Name: name, Namespace: "vols"},
		Spec: v4.VolumeSpec{Plugin: volPlugin, AccessMode: v4.AccessSingleNodeWriter, AttachmentMode: v4.AttachFileSystem,
			Capacity: &v4.VolumeCapacity{Min: "1G", Max: "2G"}}}
	if edit != nil {
		edit(v)
	}
	if err := testStore.Create(context.Background(), v, store.Raw{}); err != nil {
		t.Fatal(err)
	}
}

// setNode changes a stored node.
func setNode(t *testing.T, name string, change func(*v4.Node)) {
	t.Helper()
	n, err := store.Typed[*v4.Node](testStore, v4.KindNode).Get(context.Background(), "", name)
	if err != nil {
		t.Fatal(err)
	}
	change(n)
	if err := testStore.Update(context.Background(), n, store.Raw{}); err != nil {
		t.Fatal(err)
	}
}

func getVolume(t *testing.T, name string) (*v4.CSIVolume, bool) {
	t.Helper()
	v, err := store.Typed[*v4.CSIVolume](testStore, v4.KindVolume).Get(context.Background(), "vols", name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return v, true
}

// waitVolume waits until volume name satisfies ok, and returns it.
func (e *env) waitVolume(name, what string, ok func(*v4.CSIVolume) bool) *v4.CSIVolume {
	e.t.Helper()
	var got *v4.CSIVolume
	e.eventually(what, func() bool {
		v, found := getVolume(e.t, name)
		got = v
		return found && ok(v)
	})
	return got
}

func inPhase(phase string) func(*v4.CSIVolume) bool {
	return func(v *v4.CSIVolume) bool { return v.Status.Phase == phase }
}

// A new volume is created through the node whose plugin offers the controller: its UID as
// the name, the capacity in bytes, its secret's items at call time; the reply's ID,
// capacity, context and topology land in the status, the secret never does.
func TestVolumeCreated(t *testing.T) {
	fake := &volumestest.Fake{}
	e := startVolumes(t, fake, map[string]func(*v4.Node){"n1": withPlugin(false), "n2": withPlugin(true, v4.CSICreateDelete)})
	sec := &v4.Secret{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindSecret}, Metadata: v4.ObjectMeta{Name: "creds", Namespace: "vols"},
		Datas: map[string]v4.SecretData{"token": {Content: base64.StdEncoding.EncodeToString([]byte("s3cret-value"))}}}
	if err := testStore.Create(context.Background(), sec, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	putVolume(t, "data", func(v *v4.CSIVolume) {
		v.Spec.Secrets = &v4.VolumeSecretsRef{Name: "creds"}
		v.Spec.Parameters = map[string]string{"kind": "fast"}
	})
	v := e.waitVolume("data", "the volume Available", inPhase(v4.VolumeAvailable))
	creates := fake.Calls(v4.CSIOpCreate)
	if len(creates) != 1 {
		t.Fatalf("%d creates", len(creates))
	}
	c := creates[0]
	if c.Node != "n2" || c.Req.Name == "" || c.Req.Name != v.Status.UID || c.Req.MinBytes != 1e9 || c.Req.MaxBytes != 2e9 ||
		c.Req.Secrets["token"] != "s3cret-value" || c.Req.Parameters["kind"] != "fast" || c.Req.AccessMode != v4.AccessSingleNodeWriter {
		t.Fatalf("create call %+v (status %+v)", c, v.Status)
	}
	if v.Status.ExternalID != "vol-"+v.Status.UID || v.Status.Capacity != 1e9 || v.Status.Context["created-for"] != v.Status.UID ||
		len(v.Status.Topology) != 1 || v.Status.Message != "" {
		t.Fatalf("status %+v", v.Status)
	}
	b, _ := json.Marshal(v)
	if strings.Contains(string(b), "s3cret") {
		t.Fatalf("the secret is in the stored volume: %s", b)
	}
}

// A volume naming an existing one is validated, then Available with that ID; nothing is
// created.
func TestVolumeRegistered(t *testing.T) {
	fake := &volumestest.Fake{}
	e := startVolumes(t, fake, map[string]func(*v4.Node){"n1": withPlugin(true)})
	putVolume(t, "old", func(v *v4.CSIVolume) { v.Spec.ExternalID, v.Spec.Capacity = "ext-42", nil })
	v := e.waitVolume("old", "the volume Available", inPhase(v4.VolumeAvailable))
	if v.Status.ExternalID != "ext-42" || len(fake.Calls(v4.CSIOpCreate)) != 0 {
		t.Fatalf("status %+v, creates %v", v.Status, fake.Calls(v4.CSIOpCreate))
	}
	if vs := fake.Calls(v4.CSIOpValidate); len(vs) != 1 || vs[0].Req.VolumeID != "ext-42" {
		t.Fatalf("validate calls %+v", vs)
	}
}

// What cannot go on: a plugin that cannot create, or refuses to, is an Error with a
// message; no controller anywhere keeps the volume Pending, saying so, until one comes,
// and a passing failure keeps it Creating with the same UID: retried with backoff, not in
// a spin.
func TestVolumeWaitsAndFails(t *testing.T) {
	fake := &volumestest.Fake{}
	e := startVolumes(t, fake, map[string]func(*v4.Node){"n1": withPlugin(false)})
	putVolume(t, "early", nil)
	e.waitVolume("early", "a message that no controller is there", func(v *v4.CSIVolume) bool {
		return v.Status.Phase == v4.VolumePending && strings.Contains(v.Status.Message, "no Ready node has a healthy controller of plugin "+volPlugin)
	})
	if len(fake.Calls("")) != 0 {
		t.Fatalf("calls without a controller: %+v", fake.Calls(""))
	}
	e.node("n2", withPlugin(true)) // a controller, but without create-delete
	e.waitVolume("early", "Error: the plugin cannot create", func(v *v4.CSIVolume) bool {
		return v.Status.Phase == v4.VolumeError && strings.Contains(v.Status.Message, "cannot create volumes")
	})

	setNode(t, "n2", withPlugin(true, v4.CSICreateDelete)) // the plugin upgraded
	fake.Fail(v4.CSIOpCreate, fmt.Errorf("%w: out of range", volumes.ErrRefused))
	putVolume(t, "huge", func(v *v4.CSIVolume) { v.Spec.Capacity = &v4.VolumeCapacity{Min: "1P"} })
	e.waitVolume("huge", "Error: refused", func(v *v4.CSIVolume) bool {
		return v.Status.Phase == v4.VolumeError && strings.Contains(v.Status.Message, "out of range")
	})
}

// A create that fails for a while (the agent unreachable) keeps the volume Creating with
// the error as its message and the same UID, retried with a growing delay; then it is
// Available.
func TestVolumeCreateRetried(t *testing.T) {
	fake := &volumestest.Fake{}
	fake.Fail(v4.CSIOpCreate, errors.New("agent unreachable"))
	e := startVolumes(t, fake, map[string]func(*v4.Node){"n1": withPlugin(true, v4.CSICreateDelete)})
	putVolume(t, "data", nil)
	e.waitVolume("data", "Creating with the error", func(v *v4.CSIVolume) bool {
		return v.Status.Phase == v4.VolumeCreating && strings.Contains(v.Status.Message, "agent unreachable")
	})
	time.Sleep(2500 * time.Millisecond) // backoff 1 s, 2 s: at most three tries, never a spin
	if n := len(fake.Calls(v4.CSIOpCreate)); n < 1 || n > 4 {
		t.Fatalf("%d creates in 2.5 s", n)
	}
	fake.Fail(v4.CSIOpCreate, nil)
	v := e.waitVolume("data", "Available", inPhase(v4.VolumeAvailable))
	for _, c := range fake.Calls(v4.CSIOpCreate) {
		if c.Req.Name != v.Status.UID {
			t.Fatalf("create named %q, UID %q", c.Req.Name, v.Status.UID)
		}
	}
}

// A Deleting volume is deleted in its plugin, then removed; a failing delete keeps it
// Deleting with the error until it succeeds.
func TestVolumeDeleted(t *testing.T) {
	fake := &volumestest.Fake{}
	fake.Fail(v4.CSIOpDelete, errors.New("plugin busy"))
	e := startVolumes(t, fake, map[string]func(*v4.Node){"n1": withPlugin(true, v4.CSICreateDelete)})
	putVolume(t, "gone", func(v *v4.CSIVolume) {
		v.Status = v4.VolumeStatus{Phase: v4.VolumeDeleting, UID: "berth-x", ExternalID: "vol-x"}
	})
	e.waitVolume("gone", "Deleting with the error", func(v *v4.CSIVolume) bool {
		return v.Status.Phase == v4.VolumeDeleting && strings.Contains(v.Status.Message, "plugin busy")
	})
	fake.Fail(v4.CSIOpDelete, nil)
	e.eventually("the volume removed", func() bool { _, found := getVolume(t, "gone"); return !found })
	if ds := fake.Calls(v4.CSIOpDelete); len(ds) < 2 || ds[len(ds)-1].Req.VolumeID != "vol-x" {
		t.Fatalf("delete calls %+v", ds)
	}
	// Deleted while being created: the same create finds the ID, which is deleted.
	putVolume(t, "half", func(v *v4.CSIVolume) { v.Status = v4.VolumeStatus{Phase: v4.VolumeDeleting, UID: "berth-h"} })
	e.eventually("the half-created volume removed", func() bool { _, found := getVolume(t, "half"); return !found })
	if ds := fake.Calls(v4.CSIOpDelete); ds[len(ds)-1].Req.VolumeID != "vol-berth-h" {
		t.Fatalf("delete calls %+v", ds)
	}
}

// The claims of task groups that are gone, or bound to another node now, are
// unpublished and removed; a live one stays, and a publish shared with it is kept.
func TestVolumeClaimsCollected(t *testing.T) {
	fake := &volumestest.Fake{}
	e := startVolumes(t, fake, map[string]func(*v4.Node){"n1": withPlugin(true, v4.CSICreateDelete, v4.CSIPublishUnpublish),
		"n2": withPlugin(false), "n3": withPlugin(false)})
	for _, tg := range []struct{ name, node string }{{"live", "n1"}, {"moved", "n3"}} {
		tgo := v4.TaskGroup{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
			Metadata: v4.ObjectMeta{Name: tg.name, Namespace: "vols"}, Spec: v4.TaskGroupSpec{Node: tg.node}}
		if err := testStore.Create(context.Background(), &tgo, store.Raw{}); err != nil {
			t.Fatal(err)
		}
	}
	putVolume(t, "shared", func(v *v4.CSIVolume) {
		v.Spec.AccessMode = v4.AccessMultiNodeMultiWriter
		v.Status = v4.VolumeStatus{Phase: v4.VolumeAvailable, UID: "u", ExternalID: "vol-s", Claims: []v4.VolumeClaim{
			{TaskGroup: "live", Node: "n1", Mode: "write", NodeID: "id-n1"},
			{TaskGroup: "gone-same-node", Node: "n1", Mode: "write", NodeID: "id-n1"},
			{TaskGroup: "gone", Node: "n2", Mode: "read", NodeID: "id-n2"},
			{TaskGroup: "moved", Node: "n2", Mode: "read", NodeID: "id-n2"},
		}}
	})
	v := e.waitVolume("shared", "one claim left", func(v *v4.CSIVolume) bool { return len(v.Status.Claims) == 1 })
	if v.Status.Claims[0].TaskGroup != "live" {
		t.Fatalf("claims %+v", v.Status.Claims)
	}
	// n2 is unpublished once, when its last claim goes; n1 not: live still uses it.
	un := fake.Calls(v4.CSIOpUnpublish)
	if len(un) != 1 || un[0].Req.NodeID != "id-n2" || un[0].Req.VolumeID != "vol-s" || un[0].Node != "n1" {
		t.Fatalf("unpublish calls %+v", un)
	}
}

// A Deleting volume that a live task group still claims (the API refuses such a delete;
// this one was written past it) is not deleted in its plugin: it waits, saying who holds
// it.
func TestVolumeDeleteWaitsForClaims(t *testing.T) {
	fake := &volumestest.Fake{}
	e := startVolumes(t, fake, map[string]func(*v4.Node){"n1": withPlugin(true, v4.CSICreateDelete)})
	tg := v4.TaskGroup{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
		Metadata: v4.ObjectMeta{Name: "holder", Namespace: "vols"}, Spec: v4.TaskGroupSpec{Node: "n1"}}
	if err := testStore.Create(context.Background(), &tg, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	putVolume(t, "held", func(v *v4.CSIVolume) {
		v.Status = v4.VolumeStatus{Phase: v4.VolumeDeleting, UID: "berth-h", ExternalID: "vol-h",
			Claims: []v4.VolumeClaim{{TaskGroup: "holder", Node: "n1", Mode: "write"}}}
	})
	e.waitVolume("held", "a message naming the claim", func(v *v4.CSIVolume) bool {
		return v.Status.Phase == v4.VolumeDeleting && strings.Contains(v.Status.Message, "claimed by holder (node n1, write)")
	})
	if ds := fake.Calls(v4.CSIOpDelete); len(ds) != 0 {
		t.Fatalf("deleted while claimed: %+v", ds)
	}
}
