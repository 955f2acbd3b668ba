package plugin

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/devices/plugin/plugintest"
	"github.com/berthhq/berth/internal/driver"
)

func startManager(t *testing.T) (*Manager, string, chan struct{}) {
	t.Helper()
	dir := t.TempDir()
	changed := make(chan struct{}, 64)
	m := NewManager(Options{Dir: dir, Reserved: func(r string) bool { return r == "nvidia.com/gpu" },
		Changed: func() { changed <- struct{}{} }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.Dial("unix", m.Socket()); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the registration socket never opened")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return m, dir, changed
}

func waitResources(t *testing.T, m *Manager, resource string, capacity, allocatable float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, a := m.Resources()
		if c[resource] == capacity && a[resource] == allocatable {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("resources %v / %v, want %s %g / %g", c, a, resource, capacity, allocatable)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRegisterListAllocate(t *testing.T) {
	m, dir, _ := startManager(t)
	p := &plugintest.TestPlugin{Updates: make(chan []*pluginapi.Device, 4), Preferred: []string{"d2", "d0"}, DevDir: "/devs"}
	p.Updates <- []*pluginapi.Device{{ID: "d0", Health: pluginapi.Healthy}, {ID: "d1", Health: pluginapi.Unhealthy}, {ID: "d2", Health: pluginapi.Healthy}, {ID: "d3", Health: pluginapi.Healthy}}
	stop := plugintest.ServeAndRegister(t, p, dir, "test.sock", "example.com/dev")
	defer stop()
	waitResources(t, m, "example.com/dev", 4, 3)

	a, err := m.Allocate(context.Background(), "task-a", "example.com/dev", 2)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(a.DeviceIDs, ",") != "d0,d2" || a.Env["TEST_DEVICES"] != "d0,d2" || len(a.Devices) != 2 ||
		a.Devices[1] != (driver.Device{HostPath: "/devs/d2", ContainerPath: "/dev/d2", Permissions: "rw"}) || len(a.Mounts) != 1 || p.Prestarts.Load() != 1 {
		t.Fatalf("allocation %+v (the plugin preferred d2 and d0)", a)
	}
	// The same task again (a restart) keeps its devices.
	if again, err := m.Allocate(context.Background(), "task-a", "example.com/dev", 2); err != nil || strings.Join(again.DeviceIDs, ",") != "d0,d2" {
		t.Fatalf("again: %+v %v", again, err)
	}
	// One healthy device is left: the preferred answer no longer fits, the free one goes.
	b, err := m.Allocate(context.Background(), "task-b", "example.com/dev", 1)
	if err != nil || strings.Join(b.DeviceIDs, ",") != "d3" {
		t.Fatalf("task-b: %+v %v", b, err)
	}
	if _, err := m.Allocate(context.Background(), "task-c", "example.com/dev", 1); err == nil || !strings.Contains(err.Error(), "1 devices asked, 0 free and healthy") {
		t.Fatalf("task-c: %v", err)
	}
	if held := m.Held("task-a"); strings.Join(held["example.com/dev"], ",") != "d0,d2" {
		t.Fatalf("held %v", held)
	}
	m.Release("task-a")
	if c, err := m.Allocate(context.Background(), "task-c", "example.com/dev", 1); err != nil || len(c.DeviceIDs) != 1 {
		t.Fatalf("task-c after a release: %+v %v", c, err)
	}
	if _, err := m.Allocate(context.Background(), "task-d", "example.com/other", 1); err == nil || !strings.Contains(err.Error(), "no device plugin serves example.com/other") {
		t.Fatalf("unknown resource: %v", err)
	}

	// A device turns unhealthy; then the plugin goes away: its resource goes with it.
	p.Updates <- []*pluginapi.Device{{ID: "d0", Health: pluginapi.Unhealthy}, {ID: "d2", Health: pluginapi.Healthy}}
	waitResources(t, m, "example.com/dev", 2, 1)
	close(p.Updates)
	deadline := time.Now().Add(10 * time.Second)
	for m.Has("example.com/dev") {
		if time.Now().After(deadline) {
			t.Fatal("the plugin that left is still registered")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRegisterRefusals(t *testing.T) {
	_, dir, _ := startManager(t)
	for _, c := range []struct{ endpoint, resource, want string }{
		{"gpu.sock", "nvidia.com/gpu", "this node's own"},
		{"x.sock", "no-domain", "must be vendor-domain/type"},
		{"../x.sock", "example.com/dev", "must be a socket name"},
	} {
		if err := plugintest.Register(dir, c.endpoint, c.resource); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want %q", c.endpoint, c.resource, err, c.want)
		}
	}
	conn, _ := grpc.NewClient("unix://"+filepath.Join(dir, "kubelet.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer conn.Close()
	_, err := pluginapi.NewRegistrationClient(conn).Register(context.Background(), &pluginapi.RegisterRequest{Version: "v1alpha", Endpoint: "x.sock", ResourceName: "example.com/dev"})
	if err == nil || !strings.Contains(err.Error(), `version "v1alpha"`) {
		t.Errorf("old version: %v", err)
	}
}

// TestAllocateTaskAndDescribe: a task's devices of every plugin resource it asks for
// (others skipped), recorded through Options.Held once; the node described with the
// plugins' resources beside its own.
func TestAllocateTaskAndDescribe(t *testing.T) {
	m, dir, _ := startManager(t)
	var group, task string
	var held map[string][]string
	m.held = func(g, tk string, h map[string][]string) { group, task, held = g, tk, h }
	p := &plugintest.TestPlugin{Updates: make(chan []*pluginapi.Device, 4), DevDir: "/devs"}
	p.Updates <- []*pluginapi.Device{{ID: "d0", Health: pluginapi.Healthy}, {ID: "d1", Health: pluginapi.Unhealthy}, {ID: "d2", Health: pluginapi.Healthy}}
	stop := plugintest.ServeAndRegister(t, p, dir, "test.sock", "example.com/dev")
	defer stop()
	waitResources(t, m, "example.com/dev", 3, 2)

	n := &v4.Node{Spec: v4.NodeSpec{Capacity: v4.NodeResources{Extended: map[string]float64{"example.com/declared": 5}}}}
	m.Describe(n)
	if c, a := n.Spec.Capacity.Extended, n.Spec.Allocatable.Extended; c["example.com/dev"] != 3 || c["example.com/declared"] != 5 || a["example.com/dev"] != 2 {
		t.Fatalf("described: capacity %v allocatable %v", c, a)
	}
	setup, err := m.AllocateTask(context.Background(), "ns/tg", "ns.tg.a", map[string]int{"example.com/dev": 2, "example.com/declared": 1})
	if err != nil {
		t.Fatal(err)
	}
	if setup.Env["TEST_DEVICES"] != "d0,d2" || len(setup.Devices) != 2 || len(setup.Mounts) != 1 {
		t.Fatalf("task devices %+v", setup)
	}
	if group != "ns/tg" || task != "ns.tg.a" || len(held) != 1 || strings.Join(held["example.com/dev"], ",") != "d0,d2" {
		t.Fatalf("recorded %s %s %v", group, task, held)
	}
	// The task started again keeps its devices, and nothing new is recorded.
	held = nil
	again, err := m.AllocateTask(context.Background(), "ns/tg", "ns.tg.a", map[string]int{"example.com/dev": 2})
	if err != nil {
		t.Fatal(err)
	}
	if again.Env["TEST_DEVICES"] != "d0,d2" || held != nil {
		t.Fatalf("started again: devices %+v, recorded %v", again, held)
	}
}
