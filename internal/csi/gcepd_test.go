package csi

import (
	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/csi/csidriverbuild"
	"github.com/berthhq/berth/internal/csi/gcefake"
)

// startGCEPD runs the real GCE PD driver (gcefake.Driver), controller and node services
// in one process, on a socket in a fresh temp dir, its cloud faked on loopback
// (gcefake.New), and waits until it answers Probe.
func startGCEPD(t *testing.T) (*runningPlugin, *gcefake.Cloud) {
	bin := csidriverbuild.Require(t, gcefake.Driver)
	cloud := gcefake.New(t)
	dir, err := os.MkdirTemp("", "csi") // short: a socket address holds 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home") // no gcloud credentials: the metadata server's token
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "csi.sock")
	cmd := exec.Command(bin, append([]string{"--endpoint", "unix://" + sock}, cloud.DriverArgs()...)...)
	// Nothing from the test's environment: no Kubernetes, no credentials, no proxy.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GCE_METADATA_HOST=" + cloud.MetadataHost()}
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited already
		cmd.Wait()                          //nolint:errcheck // killed on purpose
		unmountUnder(t, dir)
		os.RemoveAll(dir)
		if t.Failed() {
			t.Logf("gce-pd-csi-driver output:\n%s", logs.String())
		}
	})
	c, err := New(gcefake.DriverName, sock, Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	waitReady(t, c, "gce-pd-csi-driver")
	return &runningPlugin{client: c, dir: dir}, cloud
}

// TestGCEPD drives the GCE PD driver through a disk's whole life: identity and
// capabilities, the node's ID and zone, create in that zone (twice: the same disk),
// validate, attach, stage (the driver formats the disk ext4 and mounts it), publish
// twice, a file written through one target and read through the other, unpublish,
// unstage, detach, the file found on the disk itself, delete, and the errors it answers.
func TestGCEPD(t *testing.T) {
	p, cloud := startGCEPD(t)
	c, ctx := p.client, context.Background()
	gcepdIdentity(t, c)

	node, err := c.NodeInfo(ctx)
	if err != nil || node.ID != gcefake.NodeID || node.MaxVolumes <= 0 {
		t.Fatalf("NodeInfo = %+v, %v; want ID %s and a volume limit", node, err, gcefake.NodeID)
	}
	p.node = node.ID // what the controller calls name the node by, as berth's agent reports it
	zone := Topology{gcefake.ZoneKey: gcefake.Zone}
	if !maps.Equal(node.Topology, zone) {
		t.Errorf("node topology %v, want %v", node.Topology, zone)
	}

	capability := Capability{AccessMode: v4.AccessSingleNodeWriter, FSType: "ext4"}
	req := CreateRequest{Name: "berth-test-vol", MinBytes: 1 << 30, MaxBytes: 2 << 30, Capability: capability,
		Required: []Topology{node.Topology}}
	vol, err := c.CreateVolume(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	wantID := "projects/" + gcefake.Project + "/zones/" + gcefake.Zone + "/disks/" + req.Name
	if vol.ID != wantID || vol.CapacityBytes != 1<<30 || len(vol.Topology) != 1 || !maps.Equal(vol.Topology[0], zone) {
		t.Errorf("CreateVolume = %+v, want ID %s, 1 GiB in %v", vol, wantID, zone)
	}
	if d, ok := cloud.Disk(req.Name); !ok || d.SizeGB != 1 || !strings.HasSuffix(d.DiskType, "/diskTypes/pd-standard") {
		t.Errorf("the cloud's disk = %+v (%t), want 1 GB of pd-standard", d, ok)
	}
	if again, err := c.CreateVolume(ctx, req); err != nil || again.ID != vol.ID {
		t.Errorf("creating the same name again = %+v, %v; want volume %s", again, err, vol.ID)
	}
	bigger := req
	bigger.MinBytes, bigger.MaxBytes = 3<<30, 0
	if _, err := c.CreateVolume(ctx, bigger); Code(err) != codes.AlreadyExists {
		t.Errorf("the same name with a larger size = %v, want AlreadyExists", err)
	}
	if err := c.ValidateCapability(ctx, vol.ID, capability, vol.Context, nil); err != nil {
		t.Errorf("ValidateCapability: %v", err)
	}
	// A PD is attached read-write to one instance or read-only to many, never as the
	// single writer of many.
	msw := Capability{AccessMode: v4.AccessMultiNodeSingleWriter}
	if err := c.ValidateCapability(ctx, vol.ID, msw, vol.Context, nil); Code(err) != codes.FailedPrecondition {
		t.Errorf("ValidateCapability of %s = %v, want FailedPrecondition (not confirmed)", msw.AccessMode, err)
	}

	t.Run("stage publish write", func(t *testing.T) {
		useVolume(t, p, vol, capability)
		gcepdOnDisk(t, cloud, req.Name)
	})

	if err := c.DeleteVolume(ctx, vol.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := cloud.Disk(req.Name); ok {
		t.Errorf("disk %s still in the cloud after DeleteVolume", req.Name)
	}
	t.Run("errors", func(t *testing.T) { gcepdErrors(t, p, cloud, vol.ID, capability) })
}

func gcepdIdentity(t *testing.T, c *Client) {
	ctx := context.Background()
	info, err := c.PluginInfo(ctx)
	if err != nil || info.Name != gcefake.DriverName || info.VendorVersion != gcefake.Driver.Version {
		t.Fatalf("PluginInfo = %+v, %v; want %s %s", info, err, gcefake.DriverName, gcefake.Driver.Version)
	}
	pcaps, err := c.PluginCapabilities(ctx)
	if err != nil || !pcaps.Controller || !pcaps.AccessibilityConstraints {
		t.Fatalf("PluginCapabilities = %+v, %v; want the controller service and topology", pcaps, err)
	}
	ccaps, err := c.ControllerCapabilities(ctx)
	if err != nil || !ccaps.CreateDelete || !ccaps.PublishUnpublish {
		t.Fatalf("ControllerCapabilities = %v, %v; want create-delete and publish-unpublish", ccaps, err)
	}
	ncaps, err := c.NodeCapabilities(ctx)
	if err != nil || !ncaps.StageUnstage {
		t.Fatalf("NodeCapabilities = %+v, %v; want stage-unstage", ncaps, err)
	}
}

// gcepdOnDisk checks, once the disk is detached again, that the driver formatted the
// cloud's disk ext4 and that the file written through the target is on it.
func gcepdOnDisk(t *testing.T, cloud *gcefake.Cloud, name string) {
	d, ok := cloud.Disk(name)
	if !ok || d.Attached {
		t.Fatalf("disk %s = %+v (%t), want it detached after ControllerUnpublish", name, d, ok)
	}
	if fs, err := d.FSType(); err != nil || fs != "ext4" {
		t.Errorf("the disk's file system = %q, %v; want ext4", fs, err)
	}
	if b, err := d.ReadFile("/hello"); err != nil || b != "berth" {
		t.Errorf("the file on the disk = %q, %v; want berth", b, err)
	}
}

func gcepdErrors(t *testing.T, p *runningPlugin, cloud *gcefake.Cloud, deleted string, capability Capability) {
	c, ctx := p.client, context.Background()
	if err := c.ValidateCapability(ctx, deleted, capability, nil, nil); Code(err) != codes.NotFound {
		t.Errorf("ValidateCapability of a deleted volume = %v, want NotFound", err)
	}
	if err := c.DeleteVolume(ctx, deleted, nil); err != nil {
		t.Errorf("deleting a deleted volume again = %v, want success (idempotent)", err)
	}
	if err := c.ControllerUnpublish(ctx, deleted, p.node, nil); err != nil {
		t.Errorf("ControllerUnpublish of a deleted volume = %v, want success (nothing attached)", err)
	}
	// After a failed publish the driver refuses that volume and node for a while (its
	// error backoff, 200 ms doubling), unpublish included, with the failure's code.
	pub := PublishRequest{VolumeID: deleted, NodeID: p.node, Capability: capability}
	if _, err := c.ControllerPublish(ctx, pub); Code(err) != codes.NotFound {
		t.Errorf("ControllerPublish of a deleted volume = %v, want NotFound", err)
	}
	pub.VolumeID = "no-such-volume"
	if _, err := c.ControllerPublish(ctx, pub); Code(err) != codes.InvalidArgument {
		t.Errorf("ControllerPublish of a volume ID not the driver's = %v, want InvalidArgument", err)
	}
	// The cloud refuses a disk over 64 TiB, and the driver passes its refusal on.
	_, err := c.CreateVolume(ctx, CreateRequest{Name: "berth-test-huge", MinBytes: 1 << 50, Capability: capability})
	if Code(err) != codes.InvalidArgument {
		t.Errorf("CreateVolume of 1 PiB = %v, want InvalidArgument", err)
	}

	// The parameters reach the cloud; ValidateCapability sends none, and the driver then
	// checks the disk against its default type, so a pd-ssd disk is not confirmed.
	ssd, err := c.CreateVolume(ctx, CreateRequest{Name: "berth-test-ssd", Capability: capability,
		Parameters: map[string]string{"type": "pd-ssd"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.DeleteVolume(ctx, ssd.ID, nil); err != nil {
			t.Error(err)
		}
	}()
	if d, ok := cloud.Disk("berth-test-ssd"); !ok || !strings.HasSuffix(d.DiskType, "/diskTypes/pd-ssd") {
		t.Errorf("the cloud's disk = %+v (%t), want pd-ssd", d, ok)
	}
	if err := c.ValidateCapability(ctx, ssd.ID, capability, ssd.Context, nil); Code(err) != codes.FailedPrecondition {
		t.Errorf("ValidateCapability of a pd-ssd disk without parameters = %v, want FailedPrecondition (not confirmed)", err)
	}
	pub = PublishRequest{VolumeID: ssd.ID, NodeID: "projects/" + gcefake.Project + "/zones/" + gcefake.Zone + "/instances/berth-test-nope",
		Capability: capability}
	if _, err := c.ControllerPublish(ctx, pub); Code(err) != codes.NotFound {
		t.Errorf("ControllerPublish to an unknown instance = %v, want NotFound", err)
	}
	// Never attached: the node finds no device to stage.
	req := NodeRequest{VolumeID: ssd.ID, Capability: capability, StagingPath: filepath.Join(p.dir, "staging-ssd")}
	if _, err := c.NodeStage(ctx, req); Code(err) != codes.Internal {
		t.Errorf("NodeStage of a volume not attached = %v, want Internal", err)
	}
}
