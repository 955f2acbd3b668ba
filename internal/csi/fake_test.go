package csi

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// fakePlugin is an in-process plugin for what a real one cannot be made to do on demand
// (hang, answer too much, lack capabilities). What a plugin really does is tested against
// the Kubernetes host-path driver (hostpath_test.go).
type fakePlugin struct {
	csipb.UnimplementedIdentityServer
	csipb.UnimplementedControllerServer
	csipb.UnimplementedNodeServer

	publish, stage bool // capabilities
	manifestBytes  int  // size of the manifest GetPluginInfo answers with
	block          bool // Probe blocks until its context ends
	mu             sync.Mutex
	calls          []string
	lastCreate     *csipb.CreateVolumeRequest
	lastPublish    *csipb.NodePublishVolumeRequest
}

func (f *fakePlugin) record(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name)
}

func (f *fakePlugin) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakePlugin) GetPluginInfo(context.Context, *csipb.GetPluginInfoRequest) (*csipb.GetPluginInfoResponse, error) {
	r := &csipb.GetPluginInfoResponse{Name: "fake.csi.berth.io", VendorVersion: "1"}
	if f.manifestBytes > 0 {
		r.Manifest = map[string]string{"big": strings.Repeat("x", f.manifestBytes)}
	}
	return r, nil
}

func (f *fakePlugin) Probe(ctx context.Context, _ *csipb.ProbeRequest) (*csipb.ProbeResponse, error) {
	if f.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &csipb.ProbeResponse{}, nil
}

func (f *fakePlugin) CreateVolume(_ context.Context, r *csipb.CreateVolumeRequest) (*csipb.CreateVolumeResponse, error) {
	f.mu.Lock()
	f.lastCreate = r
	f.mu.Unlock()
	return &csipb.CreateVolumeResponse{Volume: &csipb.Volume{VolumeId: "id-" + r.GetName(), CapacityBytes: r.GetCapacityRange().GetRequiredBytes()}}, nil
}

func (f *fakePlugin) DeleteVolume(_ context.Context, r *csipb.DeleteVolumeRequest) (*csipb.DeleteVolumeResponse, error) {
	return nil, status.Errorf(codes.NotFound, "volume %s not found", r.GetVolumeId())
}

func rpcCaps[T any](on bool, cap T) []T {
	if on {
		return []T{cap}
	}
	return nil
}

func (f *fakePlugin) ControllerGetCapabilities(context.Context, *csipb.ControllerGetCapabilitiesRequest) (*csipb.ControllerGetCapabilitiesResponse, error) {
	c := &csipb.ControllerServiceCapability{Type: &csipb.ControllerServiceCapability_Rpc{Rpc: &csipb.ControllerServiceCapability_RPC{
		Type: csipb.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME}}}
	return &csipb.ControllerGetCapabilitiesResponse{Capabilities: rpcCaps(f.publish, c)}, nil
}

func (f *fakePlugin) ControllerPublishVolume(context.Context, *csipb.ControllerPublishVolumeRequest) (*csipb.ControllerPublishVolumeResponse, error) {
	f.record("ControllerPublishVolume")
	return &csipb.ControllerPublishVolumeResponse{PublishContext: map[string]string{"device": "/dev/fake"}}, nil
}

func (f *fakePlugin) NodeGetCapabilities(context.Context, *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	c := &csipb.NodeServiceCapability{Type: &csipb.NodeServiceCapability_Rpc{Rpc: &csipb.NodeServiceCapability_RPC{
		Type: csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}}}
	return &csipb.NodeGetCapabilitiesResponse{Capabilities: rpcCaps(f.stage, c)}, nil
}

func (f *fakePlugin) NodeStageVolume(context.Context, *csipb.NodeStageVolumeRequest) (*csipb.NodeStageVolumeResponse, error) {
	f.record("NodeStageVolume")
	return &csipb.NodeStageVolumeResponse{}, nil
}

func (f *fakePlugin) NodePublishVolume(_ context.Context, r *csipb.NodePublishVolumeRequest) (*csipb.NodePublishVolumeResponse, error) {
	f.record("NodePublishVolume")
	f.mu.Lock()
	f.lastPublish = r
	f.mu.Unlock()
	return &csipb.NodePublishVolumeResponse{}, nil
}

// startFake serves f on a fresh unix socket and returns a client of it.
func startFake(t *testing.T, f *fakePlugin, opts Options) *Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "csi") // short: t.TempDir paths can outgrow a socket address
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "csi.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	csipb.RegisterIdentityServer(srv, f)
	csipb.RegisterControllerServer(srv, f)
	csipb.RegisterNodeServer(srv, f)
	go srv.Serve(l) //nolint:errcheck // ends with Stop below
	t.Cleanup(srv.Stop)
	c, err := New("fake", sock, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
