package agent

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/csiplugins"
	"github.com/berthhq/berth/internal/driver/fake"
	"github.com/berthhq/berth/internal/store"
)

// ctlPlugin is a minimal CSI plugin: identity, and the controller service when
// controller is set; the node service always.
type ctlPlugin struct {
	csipb.UnimplementedIdentityServer
	csipb.UnimplementedControllerServer
	csipb.UnimplementedNodeServer
	name       string
	controller bool
}

func (p *ctlPlugin) GetPluginInfo(context.Context, *csipb.GetPluginInfoRequest) (*csipb.GetPluginInfoResponse, error) {
	return &csipb.GetPluginInfoResponse{Name: p.name, VendorVersion: "1"}, nil
}

func (p *ctlPlugin) GetPluginCapabilities(context.Context, *csipb.GetPluginCapabilitiesRequest) (*csipb.GetPluginCapabilitiesResponse, error) {
	r := &csipb.GetPluginCapabilitiesResponse{}
	if p.controller {
		r.Capabilities = []*csipb.PluginCapability{{Type: &csipb.PluginCapability_Service_{
			Service: &csipb.PluginCapability_Service{Type: csipb.PluginCapability_Service_CONTROLLER_SERVICE}}}}
	}
	return r, nil
}

func (p *ctlPlugin) Probe(context.Context, *csipb.ProbeRequest) (*csipb.ProbeResponse, error) {
	return &csipb.ProbeResponse{}, nil
}

func (p *ctlPlugin) ControllerGetCapabilities(context.Context, *csipb.ControllerGetCapabilitiesRequest) (*csipb.ControllerGetCapabilitiesResponse, error) {
	rpc := func(t csipb.ControllerServiceCapability_RPC_Type) *csipb.ControllerServiceCapability {
		return &csipb.ControllerServiceCapability{Type: &csipb.ControllerServiceCapability_Rpc{Rpc: &csipb.ControllerServiceCapability_RPC{Type: t}}}
	}
	return &csipb.ControllerGetCapabilitiesResponse{Capabilities: []*csipb.ControllerServiceCapability{
		rpc(csipb.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME), rpc(csipb.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME)}}, nil
}

func (p *ctlPlugin) CreateVolume(_ context.Context, r *csipb.CreateVolumeRequest) (*csipb.CreateVolumeResponse, error) {
	switch {
	case r.GetName() == "taken":
		return nil, status.Error(codes.AlreadyExists, "a volume taken exists with another capacity")
	case r.GetCapacityRange().GetRequiredBytes() > 1<<40:
		return nil, status.Error(codes.OutOfRange, "too big")
	}
	return &csipb.CreateVolumeResponse{Volume: &csipb.Volume{VolumeId: "id-" + r.GetName(), CapacityBytes: r.GetCapacityRange().GetRequiredBytes(),
		VolumeContext:      map[string]string{"kind": r.GetParameters()["kind"], "secret": r.GetSecrets()["pw"]},
		AccessibleTopology: r.GetAccessibilityRequirements().GetRequisite()}}, nil
}

func (p *ctlPlugin) DeleteVolume(_ context.Context, r *csipb.DeleteVolumeRequest) (*csipb.DeleteVolumeResponse, error) {
	return &csipb.DeleteVolumeResponse{}, nil
}

func (p *ctlPlugin) ValidateVolumeCapabilities(_ context.Context, r *csipb.ValidateVolumeCapabilitiesRequest) (*csipb.ValidateVolumeCapabilitiesResponse, error) {
	if r.GetVolumeId() == "missing" {
		return nil, status.Error(codes.NotFound, "no volume missing")
	}
	return &csipb.ValidateVolumeCapabilitiesResponse{Confirmed: &csipb.ValidateVolumeCapabilitiesResponse_Confirmed{VolumeCapabilities: r.GetVolumeCapabilities()}}, nil
}

func (p *ctlPlugin) ControllerPublishVolume(_ context.Context, r *csipb.ControllerPublishVolumeRequest) (*csipb.ControllerPublishVolumeResponse, error) {
	return &csipb.ControllerPublishVolumeResponse{PublishContext: map[string]string{"node": r.GetNodeId()}}, nil
}

func (p *ctlPlugin) ControllerUnpublishVolume(context.Context, *csipb.ControllerUnpublishVolumeRequest) (*csipb.ControllerUnpublishVolumeResponse, error) {
	return &csipb.ControllerUnpublishVolumeResponse{}, nil
}

func (p *ctlPlugin) NodeGetInfo(context.Context, *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	return &csipb.NodeGetInfoResponse{NodeId: "n1"}, nil
}

func (p *ctlPlugin) NodeGetCapabilities(context.Context, *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	return &csipb.NodeGetCapabilitiesResponse{}, nil
}

// servePlugins serves each plugin on <dir>/<name>/csi.sock of a new plugin dir, which
// it returns.
func servePlugins(t *testing.T, plugins ...*ctlPlugin) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "csia") // short: socket addresses are at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, p := range plugins {
		os.MkdirAll(filepath.Join(dir, p.name), 0o750)
		l, err := net.Listen("unix", filepath.Join(dir, p.name, csiplugins.SocketName))
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer()
		csipb.RegisterIdentityServer(srv, p)
		csipb.RegisterControllerServer(srv, p)
		csipb.RegisterNodeServer(srv, p)
		go srv.Serve(l) //nolint:errcheck // ends with Stop
		t.Cleanup(srv.Stop)
	}
	return dir
}

// csiAgent is an agent whose registry found the given plugins.
func csiAgent(t *testing.T, plugins ...*ctlPlugin) *Agent {
	t.Helper()
	dir := servePlugins(t, plugins...)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := &Agent{cfg: Config{NodeName: "n1", CSIPluginDir: dir}, log: log, metrics: newAgentMetrics()}
	a.newCSIPlugins()
	a.csiPlugins.Scan(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.csiPlugins.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return a
}

func TestCSIControllerRoute(t *testing.T) {
	a := csiAgent(t, &ctlPlugin{name: "ctl.csi.test", controller: true}, &ctlPlugin{name: "node.csi.test"})
	post := func(body string) (int, string) {
		w := httptest.NewRecorder()
		a.handleCSIController(w, httptest.NewRequest(http.MethodPost, "/v1/csi/controller", strings.NewReader(body)))
		return w.Code, w.Body.String()
	}
	cases := []struct {
		name, body string
		code       int
		want       string
	}{
		{"create", `{"plugin":"ctl.csi.test","op":"create","name":"uid-1","minBytes":1000,"accessMode":"single-node-writer",` +
			`"attachmentMode":"file-system","topology":{"required":[{"segments":{"zone":"a"}}]},"parameters":{"kind":"fast"},"secrets":{"pw":"s"}}`,
			200, `{"volumeID":"id-uid-1","capacity":1000,"context":{"kind":"fast","secret":"s"},"topology":[{"segments":{"zone":"a"}}]}`},
		{"delete", `{"plugin":"ctl.csi.test","op":"delete","volumeID":"id-uid-1"}`, 200, `{}`},
		{"validate", `{"plugin":"ctl.csi.test","op":"validate","volumeID":"v","accessMode":"single-node-writer"}`, 200, `{}`},
		{"publish", `{"plugin":"ctl.csi.test","op":"publish","volumeID":"v","nodeID":"n2","accessMode":"single-node-writer"}`, 200, `{"publishContext":{"node":"n2"}}`},
		{"unpublish", `{"plugin":"ctl.csi.test","op":"unpublish","volumeID":"v","nodeID":"n2"}`, 200, `{}`},
		{"not found", `{"plugin":"ctl.csi.test","op":"validate","volumeID":"missing","accessMode":"single-node-writer"}`, 404, "no volume missing"},
		{"already exists", `{"plugin":"ctl.csi.test","op":"create","name":"taken","accessMode":"single-node-writer"}`, 409, "another capacity"},
		{"out of range", `{"plugin":"ctl.csi.test","op":"create","name":"big","minBytes":1099511627777,"accessMode":"single-node-writer"}`, 422, "too big"},
		{"bad access mode", `{"plugin":"ctl.csi.test","op":"create","name":"x","accessMode":"everyone"}`, 400, "unknown access mode"},
		{"unknown plugin", `{"plugin":"gone.csi.test","op":"delete","volumeID":"v"}`, 503, "has no CSI plugin gone.csi.test"},
		{"node plugin", `{"plugin":"node.csi.test","op":"delete","volumeID":"v"}`, 409, "offers no controller service"},
		{"unknown op", `{"plugin":"ctl.csi.test","op":"resize"}`, 400, `op: unknown operation \"resize\"`},
		{"unknown field", `{"plugin":"ctl.csi.test","op":"delete","size":1}`, 400, "size"},
		{"duplicate key", `{"plugin":"ctl.csi.test","op":"delete","op":"create"}`, 400, "op"},
		{"bad plugin name", `{"plugin":"../x","op":"delete"}`, 400, "plugin:"},
	}
	for _, c := range cases {
		code, body := post(c.body)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s, want %d with %s", c.name, code, body, c.code, c.want)
		}
		if code == 200 {
			var r v4.CSIControllerReply
			if err := json.Unmarshal([]byte(body), &r); err != nil {
				t.Errorf("%s: the reply does not decode: %v", c.name, err)
			}
		}
	}
}

// Only the cluster's servers may call the route: a request without a server's
// certificate is refused before it is read.
func TestCSIControllerNeedsServerCert(t *testing.T) {
	a := csiAgent(t)
	w := httptest.NewRecorder()
	a.handler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/csi/controller", strings.NewReader(`{}`)))
	if w.Code != http.StatusForbidden {
		t.Errorf("%d %s, want 403", w.Code, w.Body)
	}
}

// The agent reports the plugins it finds in its node's status, and registers them again
// with the node when an operator deleted it.
func TestAgentReportsCSIPlugins(t *testing.T) {
	c := newCluster(t)
	dir := servePlugins(t, &ctlPlugin{name: "ctl.csi.test", controller: true})
	startAgent(t, c, t.TempDir(), fake.New("process"), func(cfg *Config) {
		cfg.CSIPluginDir = dir
		cfg.PortRanges = []v4.PortRange{{Begin: 64120, End: 64121}}
	})
	reported := func() bool {
		n, err := store.Typed[*v4.Node](testStore, v4.KindNode).Get(context.Background(), "", testNode)
		if err != nil {
			return false
		}
		ps := n.Status.CSIPlugins
		return len(ps) == 1 && ps[0].Name == "ctl.csi.test" && ps[0].Healthy && ps[0].Controller && ps[0].Node
	}
	waitFor(t, "the plugin in the node's status", reported)
	if _, err := testStore.Delete(context.Background(), v4.KindNode, "", testNode, ""); err != nil {
		t.Fatal(err)
	}
	if err := testStore.ForgetNode(context.Background(), testNode); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the node to come back with its plugin", reported)
}
