package csi

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	v4 "github.com/berthhq/berth/api/v4"
)

// TestHostpathPlugin drives the real host-path driver through a volume's whole life:
// identity, node info, create with a capacity and topology, stage, publish, a file
// written through the target, unpublish, unstage, delete, and the errors it answers.
func TestHostpathPlugin(t *testing.T) {
	volumeLifecycle(t, startHostpath(t, "berth-csi-node"))
}

// volumeLifecycle drives p through a volume's whole life.
func volumeLifecycle(t *testing.T, p *runningPlugin) {
	c, ctx := p.client, context.Background()

	info, err := c.PluginInfo(ctx)
	if err != nil || info.Name != c.Plugin() {
		t.Fatalf("PluginInfo = %+v, %v", info, err)
	}
	pcaps, err := c.PluginCapabilities(ctx)
	if err != nil || !pcaps.Controller {
		t.Fatalf("PluginCapabilities = %+v, %v", pcaps, err)
	}
	ccaps, err := c.ControllerCapabilities(ctx)
	if err != nil || !ccaps.CreateDelete {
		t.Fatalf("ControllerCapabilities = %v, %v", ccaps, err)
	}

	node, err := c.NodeInfo(ctx)
	if err != nil || node.ID != p.node {
		t.Fatalf("NodeInfo = %+v, %v", node, err)
	}
	t.Logf("node topology: %v", node.Topology)
	if pcaps.AccessibilityConstraints && !slices.Contains(mapValues(node.Topology), p.node) {
		t.Errorf("node topology %v does not name the node %q", node.Topology, p.node)
	}

	capability := Capability{AccessMode: v4.AccessSingleNodeWriter}
	req := CreateRequest{Name: "berth-test-vol", MinBytes: 1 << 20, MaxBytes: 2 << 20, Capability: capability}
	if node.Topology != nil {
		req.Required = []Topology{node.Topology}
	}
	vol, err := c.CreateVolume(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if vol.CapacityBytes < req.MinBytes {
		t.Errorf("capacity %d, asked at least %d", vol.CapacityBytes, req.MinBytes)
	}
	again, err := c.CreateVolume(ctx, req)
	if err != nil || again.ID != vol.ID {
		t.Errorf("creating the same name again = %+v, %v; want volume %s", again, err, vol.ID)
	}
	if err := c.ValidateCapability(ctx, vol.ID, capability, vol.Context, nil); err != nil {
		t.Errorf("ValidateCapability: %v", err)
	}

	t.Run("stage publish write", func(t *testing.T) { useVolume(t, p, vol, capability) })

	if err := c.DeleteVolume(ctx, vol.ID, nil); err != nil {
		t.Fatal(err)
	}
	t.Run("errors", func(t *testing.T) { hostpathErrors(t, p, vol.ID, capability) })
}

// useVolume stages and publishes vol, writes a file through the target and reads it back
// from a second publish, then unpublishes and unstages.
func useVolume(t *testing.T, p *runningPlugin, vol Volume, capability Capability) {
	c, ctx := p.client, context.Background()
	pctx, err := c.ControllerPublish(ctx, PublishRequest{VolumeID: vol.ID, NodeID: p.node, Capability: capability, Context: vol.Context})
	if err != nil {
		t.Fatal(err)
	}
	req := NodeRequest{VolumeID: vol.ID, Capability: capability, PublishContext: pctx, VolumeContext: vol.Context,
		StagingPath: filepath.Join(p.dir, "staging"), TargetPath: filepath.Join(p.dir, "target")}
	staged, err := c.NodeStage(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.NodePublish(ctx, req, staged); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(req.TargetPath, "hello"), []byte("berth"), 0o644); err != nil {
		t.Fatalf("write through the target: %v", err)
	}
	second := req
	second.TargetPath = filepath.Join(p.dir, "target2")
	if err := c.NodePublish(ctx, second, staged); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(second.TargetPath, "hello")); err != nil || string(b) != "berth" {
		t.Errorf("the file through a second target = %q, %v", b, err)
	}
	for _, target := range []string{req.TargetPath, second.TargetPath} {
		if err := c.NodeUnpublish(ctx, vol.ID, target); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(filepath.Join(target, "hello")); err == nil {
			t.Errorf("%s still shows the volume after NodeUnpublish", target)
		}
	}
	if staged {
		if err := c.NodeUnstage(ctx, vol.ID, req.StagingPath); err != nil {
			t.Error(err)
		}
	}
	if err := c.ControllerUnpublish(ctx, vol.ID, p.node, nil); err != nil {
		t.Error(err)
	}
}

func hostpathErrors(t *testing.T, p *runningPlugin, deleted string, capability Capability) {
	c, ctx := p.client, context.Background()
	req := NodeRequest{VolumeID: "no-such-volume", Capability: capability,
		StagingPath: filepath.Join(p.dir, "staging-x"), TargetPath: filepath.Join(p.dir, "target-x")}
	if err := c.NodePublish(ctx, req, true); Code(err) != codes.NotFound {
		t.Errorf("NodePublish of an unknown volume = %v, want NotFound", err)
	}
	if err := c.ValidateCapability(ctx, deleted, capability, nil, nil); Code(err) != codes.NotFound {
		t.Errorf("ValidateCapability of a deleted volume = %v, want NotFound", err)
	}
	if err := c.DeleteVolume(ctx, deleted, nil); err != nil {
		t.Errorf("deleting a deleted volume again = %v, want success (idempotent)", err)
	}
	_, err := c.CreateVolume(ctx, CreateRequest{Name: "too-big", MinBytes: 1 << 50, Capability: capability})
	if Code(err) != codes.OutOfRange && Code(err) != codes.ResourceExhausted {
		t.Errorf("CreateVolume of 1 PiB = %v, want OutOfRange or ResourceExhausted", err)
	}
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
