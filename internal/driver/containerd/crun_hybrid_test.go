package containerd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The wrapper runs its crun in a mount namespace without the cgroup2 mount, with the
// arguments as given, whatever characters the crun's path holds; the host keeps its
// mount; writing it again for the same crun changes nothing.
func TestCrunWrapper(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("the crun wrapper unshares a mount namespace: CI runs as root")
		}
		t.Skip("the crun wrapper unshares a mount namespace: run as root")
	}
	if _, err := os.Stat(hybridCgroup2); err != nil {
		t.Skipf("no hybrid cgroup2 mount here: %v", err)
	}
	dir := filepath.Join(t.TempDir(), `odd "dir" it's $HOME`)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	// A stand-in crun: it writes its arguments and whether it sees the cgroup2 mount.
	fake := "#!/bin/sh\n{ printf '%s|' \"$@\"; echo; grep -c ' " + hybridCgroup2 + " ' /proc/self/mountinfo; } > " + shellQuote(out) + "\nexit 0\n"
	crun := filepath.Join(dir, "crun")
	if err := os.WriteFile(crun, []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	binDir := t.TempDir()
	w, err := crunWrapper(crun, binDir)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := crunWrapper(crun, binDir); err != nil || again != w {
		t.Fatalf("written again: %s, %v; want %s", again, err, w)
	}
	if b, err := exec.Command(w, "--root", "/run/x", "create", "a b", `c'd`).CombinedOutput(); err != nil {
		t.Fatalf("wrapper: %v: %s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := "--root|/run/x|create|a b|c'd|\n0\n"; string(got) != want {
		t.Errorf("crun saw %q, want %q (its arguments, and no cgroup2 mount)", got, want)
	}
	if b, _ := os.ReadFile("/proc/self/mountinfo"); !strings.Contains(string(b), " "+hybridCgroup2+" ") {
		t.Error("the host lost its cgroup2 mount")
	}
}
