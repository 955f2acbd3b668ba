package csi

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestCapabilityProto(t *testing.T) {
	tests := []struct {
		name    string
		c       Capability
		mode    csipb.VolumeCapability_AccessMode_Mode
		block   bool
		wantErr string
	}{
		{"reader", Capability{AccessMode: v4.AccessSingleNodeReader}, csipb.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY, false, ""},
		{"writer", Capability{AccessMode: v4.AccessSingleNodeWriter, FSType: "ext4", MountFlags: []string{"noatime"}}, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, false, ""},
		{"multi reader", Capability{AccessMode: v4.AccessMultiNodeReader}, csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, false, ""},
		{"multi single writer", Capability{AccessMode: v4.AccessMultiNodeSingleWriter, Block: true}, csipb.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER, true, ""},
		{"multi writer", Capability{AccessMode: v4.AccessMultiNodeMultiWriter}, csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, false, ""},
		{"unknown mode", Capability{AccessMode: "everyone"}, 0, false, "unknown access mode"},
		{"block with fs", Capability{AccessMode: v4.AccessSingleNodeWriter, Block: true, FSType: "xfs"}, 0, false, "block device"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vc, err := tt.c.proto()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if vc.GetAccessMode().GetMode() != tt.mode {
				t.Errorf("mode = %v, want %v", vc.GetAccessMode().GetMode(), tt.mode)
			}
			if (vc.GetBlock() != nil) != tt.block {
				t.Errorf("block = %v, want %v", vc.GetBlock() != nil, tt.block)
			}
			if !tt.block && (vc.GetMount().GetFsType() != tt.c.FSType || !slices.Equal(vc.GetMount().GetMountFlags(), tt.c.MountFlags)) {
				t.Errorf("mount = %v, want %q %v", vc.GetMount(), tt.c.FSType, tt.c.MountFlags)
			}
		})
	}
	if len(accessModes) != len(v4.AccessModes()) {
		t.Errorf("%d access modes mapped, the API has %d", len(accessModes), len(v4.AccessModes()))
	}
}

func TestNewRefusesSocketPaths(t *testing.T) {
	for _, p := range []string{"csi.sock", "/" + strings.Repeat("d", maxSocketPath)} {
		if _, err := New("p", p, Options{}); err == nil {
			t.Errorf("New(%q) succeeded", p)
		}
	}
}

func TestCreateVolumeRequest(t *testing.T) {
	f := &fakePlugin{}
	c := startFake(t, f, Options{})
	ctx := context.Background()
	v, err := c.CreateVolume(ctx, CreateRequest{
		Name: "vol", MinBytes: 1 << 30, MaxBytes: 2 << 30, Capability: Capability{AccessMode: v4.AccessSingleNodeWriter},
		Required: []Topology{{"zone": "a"}}, Preferred: []Topology{{"zone": "a", "rack": "1"}},
		Parameters: map[string]string{"k": "v"}, Secrets: map[string]string{"token": "s3cret"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if v.ID != "id-vol" || v.CapacityBytes != 1<<30 {
		t.Errorf("volume = %+v", v)
	}
	r := f.lastCreate
	if r.GetCapacityRange().GetLimitBytes() != 2<<30 || r.GetSecrets()["token"] != "s3cret" || r.GetParameters()["k"] != "v" {
		t.Errorf("request = %v", r)
	}
	if req := r.GetAccessibilityRequirements(); len(req.GetRequisite()) != 1 || req.GetPreferred()[0].GetSegments()["rack"] != "1" {
		t.Errorf("topology = %v", req)
	}
	_, err = c.CreateVolume(ctx, CreateRequest{Name: "vol", MinBytes: 2, MaxBytes: 1, Capability: Capability{AccessMode: v4.AccessSingleNodeWriter}})
	if Code(err) != codes.InvalidArgument {
		t.Errorf("min > max: %v", err)
	}
}

func TestErrorsKeepCodeAndName(t *testing.T) {
	c := startFake(t, &fakePlugin{}, Options{})
	err := c.DeleteVolume(context.Background(), "nope", map[string]string{"token": "s3cret"})
	if Code(err) != codes.NotFound || status.Code(err) != codes.NotFound {
		t.Fatalf("Code = %v, status.Code = %v (%v)", Code(err), status.Code(err), err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Plugin != "fake" || e.Call != "DeleteVolume" {
		t.Errorf("error = %#v", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %q shows a secret", err)
	}
	if Code(nil) != codes.OK {
		t.Error("Code(nil) is not OK")
	}
}

func TestCapabilitiesGateCalls(t *testing.T) {
	for _, on := range []bool{false, true} {
		f := &fakePlugin{publish: on, stage: on}
		c := startFake(t, f, Options{})
		ctx := context.Background()
		capability := Capability{AccessMode: v4.AccessSingleNodeReader}
		pctx, err := c.ControllerPublish(ctx, PublishRequest{VolumeID: "v", NodeID: "n", Capability: capability})
		if err != nil || (pctx["device"] != "") != on {
			t.Errorf("publish capability %v: context %v, err %v", on, pctx, err)
		}
		req := NodeRequest{VolumeID: "v", Capability: capability, StagingPath: "/s", TargetPath: "/t"}
		staged, err := c.NodeStage(ctx, req)
		if err != nil || staged != on {
			t.Errorf("stage capability %v: staged %v, err %v", on, staged, err)
		}
		if err := c.NodePublish(ctx, req, staged); err != nil {
			t.Fatal(err)
		}
		if got := f.lastPublish.GetStagingTargetPath(); (got == "/s") != on || !f.lastPublish.GetReadonly() {
			t.Errorf("stage capability %v: publish request %v", on, f.lastPublish)
		}
		want := []string{"NodePublishVolume"}
		if on {
			want = []string{"ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume"}
		}
		if got := f.called(); !slices.Equal(got, want) {
			t.Errorf("capability %v: calls %v, want %v", on, got, want)
		}
	}
}

func TestNodePathsMustBeClean(t *testing.T) {
	f := &fakePlugin{stage: true}
	c := startFake(t, f, Options{})
	capability := Capability{AccessMode: v4.AccessSingleNodeWriter}
	for _, p := range []string{"", "rel/target", "/a/../etc", "/a//b", "/a/./b", "/a/"} {
		req := NodeRequest{VolumeID: "v", Capability: capability, StagingPath: p, TargetPath: p}
		if _, err := c.NodeStage(context.Background(), req); Code(err) != codes.InvalidArgument {
			t.Errorf("NodeStage(%q) = %v", p, err)
		}
		if err := c.NodePublish(context.Background(), req, false); Code(err) != codes.InvalidArgument {
			t.Errorf("NodePublish(%q) = %v", p, err)
		}
		if err := c.NodeUnpublish(context.Background(), "v", p); Code(err) != codes.InvalidArgument {
			t.Errorf("NodeUnpublish(%q) = %v", p, err)
		}
	}
	if got := f.called(); len(got) != 0 {
		t.Errorf("the plugin was called: %v", got)
	}
}

func TestCallTimeout(t *testing.T) {
	c := startFake(t, &fakePlugin{block: true}, Options{Timeout: 200 * time.Millisecond})
	_, err := c.Probe(context.Background())
	if Code(err) != codes.DeadlineExceeded {
		t.Fatalf("Probe of a hanging plugin = %v, want DeadlineExceeded", err)
	}
}

func TestMessageSizeBounded(t *testing.T) {
	c := startFake(t, &fakePlugin{manifestBytes: 64 << 10}, Options{MaxMessageBytes: 16 << 10})
	_, err := c.PluginInfo(context.Background())
	if Code(err) != codes.ResourceExhausted {
		t.Fatalf("a 64 KiB answer with a 16 KiB bound = %v, want ResourceExhausted", err)
	}
	ready, err := c.Probe(context.Background())
	if err != nil || !ready {
		t.Errorf("Probe = %v, %v: an unset ready means ready", ready, err)
	}
}
