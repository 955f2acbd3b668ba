package e2e

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/devices/plugin/plugintest"
)

// A Kubernetes device plugin written in the test registers with the agent over the real
// Registration socket; its two devices become the node's example.com/dev; an application
// asking for one is placed, and the plugin's Allocate answer (the device it preferred,
// as a device node made with mknod, a mount and an env) reaches the real container.
func TestDevicePluginReachesTheContainer(t *testing.T) {
	requireDocker(t)
	if os.Geteuid() != 0 {
		t.Skip("skipping: making device nodes needs root")
	}
	dir := filepath.Join(t.TempDir(), "dp")
	devDir := filepath.Join(t.TempDir(), "devs")
	for _, d := range []string{dir, devDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Two character devices: the kernel's null (1:3) and zero (1:5).
	for name, minor := range map[string]uint32{"dev0": 3, "dev1": 5} {
		if err := unix.Mknod(filepath.Join(devDir, name), unix.S_IFCHR|0o666, int(unix.Mkdev(1, minor))); err != nil {
			t.Fatal(err)
		}
	}
	s := startServer(t, t.TempDir())
	startDockerAgent(t, s, "dk-dp", "32700-32799", "--device-plugin-dir", dir)
	s.cleanupApps("e2e-dp")
	waitUntil(t, 20*time.Second, "the registration socket", func() bool {
		c, err := net.Dial("unix", filepath.Join(dir, "kubelet.sock"))
		if err == nil {
			c.Close()
		}
		return err == nil
	})

	p := &plugintest.TestPlugin{Updates: make(chan []*pluginapi.Device, 2), Preferred: []string{"dev1"}, DevDir: devDir}
	p.Updates <- []*pluginapi.Device{{ID: "dev0", Health: pluginapi.Healthy}, {ID: "dev1", Health: pluginapi.Healthy}}
	stop := plugintest.ServeAndRegister(t, p, dir, "test.sock", "example.com/dev")
	defer stop()
	waitUntil(t, 30*time.Second, "the node to offer example.com/dev", func() bool {
		out := s.berth("", "get", "node", "dk-dp", "-o", "json")
		var n v4.Node
		return out.code == 0 && json.Unmarshal([]byte(out.stdout), &n) == nil &&
			n.Spec.Capacity.Extended["example.com/dev"] == 2 && n.Spec.Allocatable.Extended["example.com/dev"] == 2
	})

	spec := func(instances int) string {
		return appSpec{name: "dev", ns: "e2e-dp", instances: instances, containers: []string{
			container("main", "exec sleep 100000", `,"resources":{"requests":{"cpu":"0.1","memory":"32"},"extendedResources":[{"name":"example.com/dev","value":1}]}`),
		}}.json()
	}
	s.applySpec(t, spec(1))
	tg := s.running(t, "e2e-dp", "dev", 1)[0]
	if r := s.execIn("e2e-dp", tg.Metadata.Name, "main", "sh", "-c", `stat -c "%t:%T" /dev/dev1; echo "$TEST_DEVICES"; ls /test-devices`); r.code != 0 ||
		r.stdout != "1:5\ndev1\ndev0\ndev1\n" {
		t.Fatalf("in the container: %d %q %q; want the preferred device dev1 (1:5), its env and the mount", r.code, r.stdout, r.stderr)
	}
	if r := s.execIn("e2e-dp", tg.Metadata.Name, "main", "ls", "/dev/dev0"); r.code == 0 {
		t.Fatal("the container sees dev0, which it was not given")
	}
	if n := p.Prestarts.Load(); n != 1 {
		t.Errorf("PreStartContainer called %d times, want 1", n)
	}
	// A second instance takes the other device; a third finds none and the plan says so.
	s.mustBerth("scale", "application", "dev", "2", "-n", "e2e-dp")
	tgs := s.running(t, "e2e-dp", "dev", 2)
	for _, g := range tgs {
		if g.Metadata.Name == tg.Metadata.Name {
			continue
		}
		if r := s.execIn("e2e-dp", g.Metadata.Name, "main", "sh", "-c", `echo "$TEST_DEVICES"`); r.stdout != "dev0\n" {
			t.Errorf("second instance: %q, want dev0", r.stdout)
		}
	}
	if out := s.berth(spec(3), "plan", "-f", "-"); out.code != 2 || !strings.Contains(out.stdout, "insufficient example.com/dev") {
		t.Errorf("plan of a third instance: %d %q %q", out.code, out.stdout, out.stderr)
	}
}
