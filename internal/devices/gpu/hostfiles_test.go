package gpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindHostFiles(t *testing.T) {
	root := t.TempDir()
	write := func(rel string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := FindHostFiles(root); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Fatalf("empty root: %v", err)
	}
	for _, f := range []string{"dev/nvidiactl", "dev/nvidia-uvm", "dev/nvidia0",
		"usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15", "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15",
		"usr/lib64/libcuda.so.550.54.15", "usr/lib/x86_64-linux-gnu/libc.so.6", "usr/bin/nvidia-smi"} {
		write(f)
	}
	lib := filepath.Join(root, "usr/lib/x86_64-linux-gnu")
	if err := os.Symlink("libcuda.so.550.54.15", filepath.Join(lib, "libcuda.so.1")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("gone.so", filepath.Join(lib, "libnvidia-cfg.so.1")); err != nil {
		t.Fatal(err)
	}
	hf, err := FindHostFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	rel := func(ps []string) string {
		var out []string
		for _, p := range ps {
			r, _ := filepath.Rel(root, p)
			out = append(out, r)
		}
		return strings.Join(out, " ")
	}
	if got, want := rel(hf.ControlDevices), "dev/nvidiactl dev/nvidia-uvm"; got != want {
		t.Errorf("devices %q, want %q", got, want)
	}
	if got, want := rel(hf.Libraries), "usr/lib/x86_64-linux-gnu/libcuda.so.1 usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15 usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15"; got != want {
		t.Errorf("libraries %q, want %q (no libc, no dangling link, the second copy left out)", got, want)
	}
	if got, want := rel(hf.Binaries), "usr/bin/nvidia-smi"; got != want {
		t.Errorf("binaries %q, want %q", got, want)
	}
	if got := CardDevice("/", 3); got != "/dev/nvidia3" {
		t.Errorf("card device %q", got)
	}
}
