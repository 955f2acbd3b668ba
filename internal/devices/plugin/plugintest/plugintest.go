// Package plugintest is a Kubernetes device plugin for tests: it serves the v1beta1
// DevicePlugin API on a unix socket and registers with a Registration socket, as NVIDIA's
// and other plugins do, with devices, preferences and allocations the test chooses.
package plugintest

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// TestPlugin is a device plugin written for tests: it lists the devices sent on
// updates, prefers the devices in preferred, and answers Allocate with a device node,
// a mount and an env per device.
type TestPlugin struct {
	pluginapi.UnimplementedDevicePluginServer
	Updates   chan []*pluginapi.Device
	Preferred []string
	DevDir    string
	Prestarts atomic.Int32
}

func (p *TestPlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{GetPreferredAllocationAvailable: true, PreStartRequired: true}, nil
}

func (p *TestPlugin) ListAndWatch(_ *pluginapi.Empty, s grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	for {
		select {
		case <-s.Context().Done():
			return nil
		case devs, ok := <-p.Updates:
			if !ok {
				return nil
			}
			if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: devs}); err != nil {
				return err
			}
		}
	}
}

func (p *TestPlugin) GetPreferredAllocation(_ context.Context, r *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return &pluginapi.PreferredAllocationResponse{ContainerResponses: []*pluginapi.ContainerPreferredAllocationResponse{{DeviceIDs: p.Preferred}}}, nil
}

func (p *TestPlugin) Allocate(_ context.Context, r *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	ids := r.ContainerRequests[0].DevicesIds
	c := &pluginapi.ContainerAllocateResponse{Envs: map[string]string{"TEST_DEVICES": strings.Join(ids, ",")}}
	for _, id := range ids {
		c.Devices = append(c.Devices, &pluginapi.DeviceSpec{HostPath: filepath.Join(p.DevDir, id), ContainerPath: "/dev/" + id, Permissions: "rw"})
	}
	c.Mounts = []*pluginapi.Mount{{HostPath: p.DevDir, ContainerPath: "/test-devices", ReadOnly: true}}
	return &pluginapi.AllocateResponse{ContainerResponses: []*pluginapi.ContainerAllocateResponse{c}}, nil
}

func (p *TestPlugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	p.Prestarts.Add(1)
	return &pluginapi.PreStartContainerResponse{}, nil
}

// ServeAndRegister serves the plugin on dir/endpoint and registers it for resource with
// the Registration socket in dir, as a device plugin does. It returns a stop function.
func ServeAndRegister(t testing.TB, p *TestPlugin, dir, endpoint, resource string) (stop func()) {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(dir, endpoint))
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	go srv.Serve(ln)
	if err := Register(dir, endpoint, resource); err != nil {
		srv.Stop()
		t.Fatal(err)
	}
	return srv.Stop
}

// Register calls Registration.Register on dir's kubelet.sock.
func Register(dir, endpoint, resource string) error {
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "kubelet.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: endpoint, ResourceName: resource,
		Options: &pluginapi.DevicePluginOptions{GetPreferredAllocationAvailable: true, PreStartRequired: true},
	})
	return err
}
