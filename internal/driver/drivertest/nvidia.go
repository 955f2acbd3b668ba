package drivertest

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// NVIDIATree makes a host tree with the NVIDIA driver's files for a driver's GPURoot:
// device nodes made with mknod (major 195: nvidiactl 255, cards 0 and 3), libcuda (a
// file and its .so.1 link, "fake libcuda") and an nvidia-smi script. It skips the test
// without root, which mknod needs.
func NVIDIATree(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: making device nodes needs root")
	}
	root := t.TempDir()
	for _, dir := range []string{"dev", "usr/lib/x86_64-linux-gnu", "usr/bin"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, minor := range map[string]uint32{"nvidiactl": 255, "nvidia0": 0, "nvidia3": 3} {
		if err := unix.Mknod(filepath.Join(root, "dev", name), unix.S_IFCHR|0o666, int(unix.Mkdev(195, minor))); err != nil {
			t.Fatalf("mknod %s: %v", name, err)
		}
	}
	lib := filepath.Join(root, "usr/lib/x86_64-linux-gnu")
	if err := os.WriteFile(filepath.Join(lib, "libcuda.so.550.54.15"), []byte("fake libcuda\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("libcuda.so.550.54.15", filepath.Join(lib, "libcuda.so.1")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "usr/bin/nvidia-smi"), []byte("#!/bin/sh\necho fake nvidia-smi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}
