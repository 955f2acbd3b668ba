package gpus

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/berthhq/berth/internal/driver"
)

// driverTree makes a host tree with the NVIDIA driver's files: plain files stand in for
// the device nodes, which FindHostFiles only looks for.
func driverTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range []string{"dev/nvidiactl", "dev/nvidia-uvm", "dev/nvidia0", "dev/nvidia3",
		"usr/lib/x86_64-linux-gnu/libcuda.so.1", "usr/bin/nvidia-smi"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestFor(t *testing.T) {
	root := driverTree(t)
	card := []driver.GPU{{UUID: "GPU-3", Minor: 3, NUMANode: -1}}
	dev := func(name string) driver.Device {
		return driver.Device{HostPath: filepath.Join(root, "dev", name), ContainerPath: "/dev/" + name, Permissions: "rwm"}
	}
	devices := []driver.Device{dev("nvidiactl"), dev("nvidia-uvm"), dev("nvidia3")}
	for _, c := range []struct {
		name  string
		setup driver.ContainerSetup
		gpus  []driver.GPU
		want  Needs
	}{
		{"no cards", driver.ContainerSetup{}, nil, Needs{}},
		{"the host's driver", driver.ContainerSetup{}, card, Needs{Devices: devices, Mounts: []driver.Mount{
			{HostPath: filepath.Join(root, "usr/lib/x86_64-linux-gnu/libcuda.so.1"), ContainerPath: "/usr/local/nvidia/lib64/libcuda.so.1", ReadOnly: true},
			{HostPath: filepath.Join(root, "usr/bin/nvidia-smi"), ContainerPath: "/usr/local/nvidia/bin/nvidia-smi", ReadOnly: true},
		}}},
		{"a sharing mode's driver", driver.ContainerSetup{GPUDriverDir: "/var/lib/vcuda/drv"}, card, Needs{Devices: devices, Mounts: []driver.Mount{
			{HostPath: "/var/lib/vcuda/drv", ContainerPath: "/usr/local/nvidia", ReadOnly: true},
		}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			setup := c.setup
			got, err := NewFiles(root).For(&driver.Task{GPUs: c.gpus, Setup: &setup})
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v, %v\nwant %+v", got, err, c.want)
			}
		})
	}
	_, err := NewFiles(t.TempDir()).For(&driver.Task{GPUs: card, Setup: &driver.ContainerSetup{}})
	if err == nil || !strings.Contains(err.Error(), "GPUs GPU-3: the NVIDIA driver is not installed") {
		t.Fatalf("without a driver: %v", err)
	}
}

func TestLibraryPath(t *testing.T) {
	if v, add := LibraryPath([]string{"A=1"}); !add || v != "LD_LIBRARY_PATH=/usr/local/nvidia/lib64" {
		t.Errorf("got %q %v", v, add)
	}
	if _, add := LibraryPath([]string{"LD_LIBRARY_PATH=/opt"}); add {
		t.Error("the task's own path was overridden")
	}
}
