package csiplugins

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	v4 "github.com/berthhq/berth/api/v4"
)

// testPlugin is a minimal CSI plugin served over a real unix socket: identity always,
// the controller and node services as configured.
type testPlugin struct {
	csipb.UnimplementedIdentityServer
	csipb.UnimplementedControllerServer
	csipb.UnimplementedNodeServer

	name       string
	controller bool // offers the controller service (create-delete, publish-unpublish)
	node       bool // offers the node service (stage-unstage)
	topology   map[string]string
}

func (p *testPlugin) GetPluginInfo(context.Context, *csipb.GetPluginInfoRequest) (*csipb.GetPluginInfoResponse, error) {
	return &csipb.GetPluginInfoResponse{Name: p.name, VendorVersion: "1.2.3"}, nil
}

func (p *testPlugin) GetPluginCapabilities(context.Context, *csipb.GetPluginCapabilitiesRequest) (*csipb.GetPluginCapabilitiesResponse, error) {
	r := &csipb.GetPluginCapabilitiesResponse{}
	if p.controller {
		r.Capabilities = append(r.Capabilities, &csipb.PluginCapability{Type: &csipb.PluginCapability_Service_{
			Service: &csipb.PluginCapability_Service{Type: csipb.PluginCapability_Service_CONTROLLER_SERVICE}}})
	}
	return r, nil
}

func (p *testPlugin) Probe(context.Context, *csipb.ProbeRequest) (*csipb.ProbeResponse, error) {
	return &csipb.ProbeResponse{}, nil
}

func (p *testPlugin) ControllerGetCapabilities(context.Context, *csipb.ControllerGetCapabilitiesRequest) (*csipb.ControllerGetCapabilitiesResponse, error) {
	rpc := func(t csipb.ControllerServiceCapability_RPC_Type) *csipb.ControllerServiceCapability {
		return &csipb.ControllerServiceCapability{Type: &csipb.ControllerServiceCapability_Rpc{Rpc: &csipb.ControllerServiceCapability_RPC{Type: t}}}
	}
	return &csipb.ControllerGetCapabilitiesResponse{Capabilities: []*csipb.ControllerServiceCapability{
		rpc(csipb.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME), rpc(csipb.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME)}}, nil
}

func (p *testPlugin) NodeGetInfo(ctx context.Context, r *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	if !p.node {
		return p.UnimplementedNodeServer.NodeGetInfo(ctx, r)
	}
	out := &csipb.NodeGetInfoResponse{NodeId: "node-1", MaxVolumesPerNode: 7}
	if p.topology != nil {
		out.AccessibleTopology = &csipb.Topology{Segments: p.topology}
	}
	return out, nil
}

func (p *testPlugin) NodeGetCapabilities(context.Context, *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	return &csipb.NodeGetCapabilitiesResponse{Capabilities: []*csipb.NodeServiceCapability{{Type: &csipb.NodeServiceCapability_Rpc{
		Rpc: &csipb.NodeServiceCapability_RPC{Type: csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}}}}}, nil
}

// pluginDir makes a plugin directory short enough for socket addresses.
func pluginDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "csip")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// serve runs p on <dir>/<sub>/csi.sock and returns a function that stops it and removes
// its socket.
func serve(t *testing.T, dir, sub string, p *testPlugin) func() {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, sub), 0o750); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, sub, SocketName)
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	csipb.RegisterIdentityServer(srv, p)
	csipb.RegisterControllerServer(srv, p)
	csipb.RegisterNodeServer(srv, p)
	go srv.Serve(l) //nolint:errcheck // ends with Stop
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			srv.Stop()
			os.Remove(sock)
		}
	}
	t.Cleanup(stop)
	return stop
}

func newRegistry(t *testing.T, dir string) *Registry {
	t.Helper()
	r := New(Options{Dir: dir})
	t.Cleanup(r.closeAll)
	return r
}

func changed(r *Registry) bool {
	select {
	case <-r.Changes():
		return true
	default:
		return false
	}
}

func TestRegistryDescribesPlugins(t *testing.T) {
	dir := pluginDir(t)
	serve(t, dir, "both.csi.test", &testPlugin{name: "both.csi.test", controller: true, node: true, topology: map[string]string{"zone": "a"}})
	serve(t, dir, "ctl.csi.test", &testPlugin{name: "ctl.csi.test", controller: true})
	serve(t, dir, "liar.csi.test", &testPlugin{name: "other.csi.test", node: true})
	serve(t, dir, "bad-topo.csi.test", &testPlugin{name: "bad-topo.csi.test", node: true, topology: map[string]string{"zone": "a b"}})
	r := newRegistry(t, dir)
	r.Scan(context.Background())
	if !changed(r) {
		t.Fatal("the first scan did not signal a change")
	}
	got := map[string]v4.CSIPlugin{}
	for _, p := range r.List() {
		got[p.Name] = p
	}
	if len(got) != 4 {
		t.Fatalf("List = %+v, want 4 plugins", r.List())
	}
	both := got["both.csi.test"]
	if !both.Healthy || !both.Controller || !both.Node || both.NodeID != "node-1" || both.MaxVolumes != 7 || both.Version != "1.2.3" ||
		both.Topology["zone"] != "a" || strings.Join(both.ControllerCapabilities, ",") != "create-delete,publish-unpublish" ||
		strings.Join(both.NodeCapabilities, ",") != "stage-unstage" {
		t.Errorf("both = %+v", both)
	}
	if ctl := got["ctl.csi.test"]; !ctl.Healthy || !ctl.Controller || ctl.Node {
		t.Errorf("a controller plugin without the node service = %+v", ctl)
	}
	if liar := got["liar.csi.test"]; liar.Healthy || !strings.Contains(liar.Message, `says its name is "other.csi.test"`) {
		t.Errorf("a plugin named unlike its directory = %+v, want unhealthy with the names", liar)
	}
	if bt := got["bad-topo.csi.test"]; bt.Healthy || bt.Topology != nil || !strings.Contains(bt.Message, "topology") {
		t.Errorf("a plugin with an invalid topology = %+v, want unhealthy without it", bt)
	}
	if errs := v4.ValidateCSIPlugins(r.List()); len(errs) > 0 {
		t.Errorf("the list is not valid for the server: %v", errs)
	}
	if c, info, ok := r.Client("both.csi.test"); !ok || c == nil || info.Name != "both.csi.test" {
		t.Errorf("Client = %v, %+v, %t", c, info, ok)
	}
	if _, _, ok := r.Client("nope.csi.test"); ok {
		t.Error("Client of an unknown plugin is ok")
	}
	r.Scan(context.Background())
	if changed(r) {
		t.Error("a scan that found the same plugins signalled a change")
	}
}

func TestRegistryForgetsGonePlugins(t *testing.T) {
	dir := pluginDir(t)
	stop := serve(t, dir, "a.csi.test", &testPlugin{name: "a.csi.test", node: true})
	r := newRegistry(t, dir)
	r.Scan(context.Background())
	changed(r)
	if l := r.List(); len(l) != 1 || !l[0].Healthy {
		t.Fatalf("List = %+v", l)
	}
	stop()
	r.Scan(context.Background())
	if !changed(r) {
		t.Error("a plugin that went did not signal a change")
	}
	if l := r.List(); len(l) != 0 {
		t.Errorf("List after the socket went = %+v", l)
	}
	if _, _, ok := r.Client("a.csi.test"); ok {
		t.Error("the client of a gone plugin is still handed out")
	}
}

// TestRegistryIgnoresHostileEntries: what a plugin workload can put in the directory
// never makes the agent connect outside it.
func TestRegistryIgnoresHostileEntries(t *testing.T) {
	dir := pluginDir(t)
	outside := pluginDir(t)
	serve(t, outside, "x", &testPlugin{name: "escape.csi.test", node: true})
	if err := os.Symlink(filepath.Join(outside, "x"), filepath.Join(dir, "escape.csi.test")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "link.csi.test"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "x", SocketName), filepath.Join(dir, "link.csi.test", SocketName)); err != nil {
		t.Fatal(err)
	}
	serve(t, dir, "bad_name", &testPlugin{name: "bad_name", node: true})
	if err := os.MkdirAll(filepath.Join(dir, "file.csi.test"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file.csi.test", SocketName), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "starting.csi.test"), 0o750); err != nil {
		t.Fatal(err)
	}
	r := newRegistry(t, dir)
	r.Scan(context.Background())
	if l := r.List(); len(l) != 0 {
		t.Errorf("List = %+v, want nothing", l)
	}
	for _, name := range []string{"escape.csi.test", "link.csi.test", "bad_name", "file.csi.test"} {
		if r.ignored[name] == "" {
			t.Errorf("%s was not logged as ignored", name)
		}
	}
	if why := r.ignored["starting.csi.test"]; why != "" {
		t.Errorf("a directory without a socket yet was logged: %s", why)
	}
}

func TestRegistryBoundsPlugins(t *testing.T) {
	dir := pluginDir(t)
	for i := range v4.MaxCSIPlugins + 2 {
		name := string(rune('a'+i/26)) + string(rune('a'+i%26)) + ".csi.test"
		serve(t, dir, name, &testPlugin{name: name, node: true})
	}
	r := newRegistry(t, dir)
	r.Scan(context.Background())
	if l := r.List(); len(l) != v4.MaxCSIPlugins {
		t.Errorf("List has %d plugins, want at most %d", len(l), v4.MaxCSIPlugins)
	}
}

func TestRunStopsWithContext(t *testing.T) {
	dir := filepath.Join(pluginDir(t), "plugins")
	r := New(Options{Dir: dir})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("plugin dir: %v, %v", fi, err)
	}
}

// A socket nothing listens on (a plugin killed without removing it) is no plugin: it is
// not reported, and a plugin known before goes.
func TestRegistryDropsStaleSockets(t *testing.T) {
	dir := pluginDir(t)
	if err := os.MkdirAll(filepath.Join(dir, "stale.csi.test"), 0o750); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "stale.csi.test", SocketName))
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // the socket file stays, with no listener
	r := newRegistry(t, dir)
	r.Scan(context.Background())
	if l := r.List(); len(l) != 0 {
		t.Errorf("List = %+v, want nothing", l)
	}
	if !strings.Contains(r.ignored["stale.csi.test"], "nothing listens") {
		t.Errorf("ignored %q", r.ignored["stale.csi.test"])
	}
}
