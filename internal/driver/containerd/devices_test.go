package containerd

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/drivertest"
	"github.com/berthhq/berth/internal/driver/gpus"
)

func deviceAt(s *oci.Spec, p string) *specs.LinuxDevice {
	for i, d := range s.Linux.Devices {
		if d.Path == p {
			return &s.Linux.Devices[i]
		}
	}
	return nil
}

// allowed reports whether the device cgroup allows access on a character device.
func allowed(s *oci.Spec, major, minor int64, access string) bool {
	return slices.ContainsFunc(s.Linux.Resources.Devices, func(r specs.LinuxDeviceCgroup) bool {
		return r.Allow && r.Type == "c" && r.Major != nil && *r.Major == major && r.Minor != nil && *r.Minor == minor && r.Access == access
	})
}

// A device node becomes an OCI device with the host node's numbers and a cgroup rule
// of its permissions; a path that is no device node, or a container path that is not
// absolute and clean, fails naming it.
func TestDevices(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, _ := genSpec(t, withDevices([]driver.Device{
		{HostPath: "/dev/null", ContainerPath: "/dev/berth-null"},
		{HostPath: "/dev/zero", ContainerPath: "/dev/zero", Permissions: "r"},
	}))
	null := deviceAt(s, "/dev/berth-null")
	if null == nil || null.Type != "c" || null.Major != 1 || null.Minor != 3 || !allowed(s, 1, 3, "rwm") {
		t.Fatalf("/dev/null as /dev/berth-null: %+v, rules %+v", null, s.Linux.Resources.Devices)
	}
	if zero := deviceAt(s, "/dev/zero"); zero == nil || zero.Minor != 5 || !allowed(s, 1, 5, "r") {
		t.Fatalf("/dev/zero read-only: %+v", zero)
	}
	for _, c := range []struct {
		dev  driver.Device
		want string
	}{
		{driver.Device{HostPath: file, ContainerPath: "/dev/x"}, "device " + file + ": not a device node"},
		{driver.Device{HostPath: "/dev/no-such-device", ContainerPath: "/dev/x"}, "no such file"},
		{driver.Device{HostPath: "dev/null", ContainerPath: "/dev/x"}, "must be absolute"},
		{driver.Device{HostPath: "/dev/null", ContainerPath: "/dev/../etc/x"}, "absolute and clean"},
		{driver.Device{HostPath: "/dev/null", ContainerPath: "/dev/x", Permissions: "rwx"}, "permissions"},
	} {
		if _, _, err := linuxDevice(c.dev); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.dev, err, c.want)
		}
	}
	d := &Driver{gpuFiles: gpus.NewFiles(t.TempDir())}
	tk := &driver.Task{Container: &v4.Container{}, Setup: &driver.ContainerSetup{CDIDevices: []string{"vendor.com/dev=1"}}}
	if _, err := d.deviceOpts(tk, nil); err == nil || !strings.Contains(err.Error(), "CDI devices vendor.com/dev=1: not supported by the containerd driver") {
		t.Fatalf("CDI: %v", err)
	}
}

// A task's cards: their device nodes and the driver's (made with mknod in a tree of the
// test's: drivertest.NVIDIATree), the driver's files read-only under /usr/local/nvidia, the loader's path and,
// for an MPS client, the host's IPC namespace.
func TestGPUSpec(t *testing.T) {
	root := drivertest.NVIDIATree(t)
	d := &Driver{gpuFiles: gpus.NewFiles(root)}
	tk := &driver.Task{
		Container: &v4.Container{},
		GPUs:      []driver.GPU{{UUID: "GPU-3", Minor: 3, NUMANode: 1}},
		Env:       []string{"NVIDIA_VISIBLE_DEVICES=GPU-3"},
		Setup:     &driver.ContainerSetup{IPCHost: true},
	}
	opts, err := d.deviceOpts(tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := genSpec(t, opts...)
	if card := deviceAt(s, "/dev/nvidia3"); card == nil || card.Major != 195 || card.Minor != 3 || !allowed(s, 195, 3, "rwm") {
		t.Fatalf("card: %+v", card)
	}
	if ctl := deviceAt(s, "/dev/nvidiactl"); ctl == nil || ctl.Minor != 255 {
		t.Fatalf("control node: %+v", ctl)
	}
	if deviceAt(s, "/dev/nvidia0") != nil {
		t.Fatal("another card's node given")
	}
	lib := mountAt(s, "/usr/local/nvidia/lib64/libcuda.so.550.54.15")
	if lib == nil || lib.Source != filepath.Join(root, "usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15") || !slices.Contains(lib.Options, "ro") {
		t.Fatalf("libcuda: %+v", lib)
	}
	if mountAt(s, "/usr/local/nvidia/bin/nvidia-smi") == nil {
		t.Fatal("nvidia-smi not mounted")
	}
	if !slices.Contains(s.Process.Env, "LD_LIBRARY_PATH=/usr/local/nvidia/lib64") {
		t.Fatalf("env %q", s.Process.Env)
	}
	if hasNamespace(s, specs.IPCNamespace) || mountAt(s, "/dev/shm").Source != "/dev/shm" {
		t.Fatal("not in the host's IPC namespace")
	}

	// A sharing mode's driver directory replaces the driver's files.
	tk.Setup = &driver.ContainerSetup{GPUDriverDir: "/var/lib/vcuda/drv"}
	if opts, err = d.deviceOpts(tk, nil); err != nil {
		t.Fatal(err)
	}
	s, _ = genSpec(t, opts...)
	if m := mountAt(s, "/usr/local/nvidia"); m == nil || m.Source != "/var/lib/vcuda/drv" || mountAt(s, "/usr/local/nvidia/lib64/libcuda.so.550.54.15") != nil {
		t.Fatalf("driver dir: %+v", s.Mounts)
	}
	if !hasNamespace(s, specs.IPCNamespace) {
		t.Fatal("IPC namespace shared without IPCHost")
	}

	// Without the driver's files a card cannot be given: the start says why.
	bare := &Driver{gpuFiles: gpus.NewFiles(t.TempDir())}
	if _, err := bare.deviceOpts(tk, nil); err == nil || !strings.Contains(err.Error(), "the NVIDIA driver is not installed") {
		t.Fatalf("without a driver: %v", err)
	}
}
