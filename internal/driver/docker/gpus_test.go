package docker

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/drivertest"
)

// TestGPUDevicesWithoutToolkit gives a container a card on a machine without the NVIDIA
// container toolkit: device nodes made with mknod in a tree of the test's stand in for
// the driver's, and a file for libcuda. The container sees its card's node and the
// control node, not the other card, and the driver's files under /usr/local/nvidia.
func TestGPUDevicesWithoutToolkit(t *testing.T) {
	needDocker(t)
	root := drivertest.NVIDIATree(t)
	d, err := New(Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), GPURoot: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })

	task := newTask(t, d, "gpu", imgPlain, "/bin/sh", "-c",
		`stat -c "%n %F %t:%T" /dev/nvidia3 /dev/nvidiactl; ls /dev | grep -c '^nvidia0$'; cat /usr/local/nvidia/lib64/libcuda.so.1; /usr/local/nvidia/bin/nvidia-smi; echo "LD=$LD_LIBRARY_PATH"; echo done; sleep 30`)
	task.GPUs = []driver.GPU{{UUID: "GPU-test-3", Index: 3, Minor: 3, NUMANode: -1, Cores: 100, MemoryMiB: 1024}}
	mustStart(t, d, task)
	out := waitLog(t, d, task.ID, "done")
	for _, want := range []string{
		"/dev/nvidia3 character special file c3:3", "/dev/nvidiactl character special file c3:ff",
		"\n0\n", "fake libcuda", "fake nvidia-smi", "LD=/usr/local/nvidia/lib64",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("container output lacks %q:\n%s", want, out)
		}
	}

	// Without the driver's files a card cannot be given: the start says why.
	bare, err := New(Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), GPURoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bare.Close() })
	none := newTask(t, bare, "nodriver", imgPlain, "/bin/true")
	none.GPUs = task.GPUs
	if _, err := bare.Start(ctxT(t, 30*time.Second), none); err == nil || !strings.Contains(err.Error(), "the NVIDIA driver is not installed") {
		t.Fatalf("start without a driver: %v", err)
	}
}
