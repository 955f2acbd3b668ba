package executor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounts need root")
	}
}

// mountLine is dir's line of the mount table, "" when it is not mounted.
func mountLine(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			return line
		}
	}
	return ""
}

// A Memory emptyDir is a tmpfs of its size limit, unmounted once the pod stopped.
func TestMemoryEmptyDirIsATmpfs(t *testing.T) {
	requireRoot(t)
	h, _ := newDockerHarness(t)
	tg := containerTG("mem", "app")
	tg.Spec.Template.Spec.Volumes = []v4.PodVolume{{Name: "shm", EmptyDir: &v4.EmptyDirVolume{Medium: v4.MediumMemory, SizeLimit: "3"}}}
	tg.Spec.Template.Spec.Containers[0].Volumes = []v4.Volume{{Volume: v4.VolumeMount{MountPath: "/shm", PodVolume: "shm"}}}
	h.run(tg)
	h.rec.waitPhase(t, "mem", v4.StatusRunning)
	dir := filepath.Join(PodDir(h.dir, testNS, "mem"), "volumes", "shm")
	line := mountLine(t, dir)
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	if !strings.Contains(line, " tmpfs ") || !strings.Contains(line, "size=3072k") || !strings.Contains(line, "nosuid") {
		t.Fatalf("mount of the emptyDir: %q", line)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Blocks*uint64(st.Bsize) != 3<<20 {
		t.Errorf("tmpfs of %d bytes (%v), want 3 MiB", st.Blocks*uint64(st.Bsize), err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode() != os.ModeDir|os.ModeSticky|0o777 {
		t.Errorf("tmpfs root %v %v", fi, err)
	}
	h.e.Kill(testNS, "mem")
	if line := mountLine(t, dir); line != "" {
		t.Errorf("still mounted after the pod stopped: %q", line)
	}
	if err := h.e.Remove(context.Background(), testNS, "mem"); err != nil {
		t.Fatal(err)
	}
}

// The removal of a pod the agent no longer knows (its spec is gone after a crash)
// unmounts what is mounted in its directory first, and never removes through a mount.
func TestRemoveUnmountsFirst(t *testing.T) {
	requireRoot(t)
	h, _ := newDockerHarness(t)
	precious := t.TempDir()
	if err := os.WriteFile(filepath.Join(precious, "keep"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(PodDir(h.dir, testNS, "gone"), "volumes", "v")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(precious, dir, "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	if err := h.e.Remove(context.Background(), testNS, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(precious, "keep")); err != nil {
		t.Fatalf("the removal reached through the mount: %v", err)
	}
	if _, err := os.Stat(PodDir(h.dir, testNS, "gone")); !os.IsNotExist(err) {
		t.Errorf("pod directory stays: %v", err)
	}
}

// fakeFlex records the FlexVolume calls.
type fakeFlex struct {
	mu      sync.Mutex
	mounted map[string]map[string][]byte // dir -> secret
	calls   []string
}

func (f *fakeFlex) Mount(_ context.Context, pod, dir string, v *v4.FlexVolume, secret map[string][]byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "mount "+pod+" "+v.Driver)
	f.mounted[dir] = secret
	return os.MkdirAll(dir, 0o755)
}

func (f *fakeFlex) Unmount(_ context.Context, pod, dir string, v *v4.FlexVolume) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "unmount "+pod+" "+v.Driver)
	delete(f.mounted, dir)
	return nil
}

func flexPod(name string) *v4.TaskGroup {
	tg := containerTG(name, "app")
	tg.Spec.Template.Spec.Volumes = []v4.PodVolume{{Name: "disk", FlexVolume: &v4.FlexVolume{Driver: "acme/nfs", SecretRef: &v4.LocalObjectReference{Name: "nfs-pw"}}}}
	tg.Spec.Template.Spec.Containers[0].Volumes = []v4.Volume{{Volume: v4.VolumeMount{MountPath: "/disk", PodVolume: "disk"}}}
	return tg
}

// A FlexVolume is mounted through the node's drivers with its secret's data before the
// tasks start, and unmounted once they stopped and again at the removal.
func TestFlexVolumeMountedThroughTheDrivers(t *testing.T) {
	h, d := newDockerHarness(t)
	flex := &fakeFlex{mounted: map[string]map[string][]byte{}}
	h.e.cfg.FlexVolumes = flex
	h.putSecret("nfs-pw", "1", "password", "pw")
	h.run(flexPod("fx"))
	h.rec.waitPhase(t, "fx", v4.StatusRunning)
	dir := filepath.Join(PodDir(h.dir, testNS, "fx"), "volumes", "disk")
	flex.mu.Lock()
	secret, ok := flex.mounted[dir]
	flex.mu.Unlock()
	if !ok || string(secret["password"]) != "pw" {
		t.Fatalf("mounted %v", flex.mounted)
	}
	if task, _ := d.Task(id("fx", "app")); len(task.Setup.Volumes) != 1 || task.Setup.Volumes[0].HostPath != dir {
		t.Errorf("mounts %+v", task.Setup.Volumes)
	}
	h.e.Kill(testNS, "fx")
	if err := h.e.Remove(context.Background(), testNS, "fx"); err != nil {
		t.Fatal(err)
	}
	flex.mu.Lock()
	defer flex.mu.Unlock()
	want := []string{"mount ns-a/fx acme/nfs", "unmount ns-a/fx acme/nfs", "unmount ns-a/fx acme/nfs"}
	if strings.Join(flex.calls, ";") != strings.Join(want, ";") {
		t.Errorf("calls %q, want %q", flex.calls, want)
	}
}

func TestFlexVolumeNeedsDrivers(t *testing.T) {
	h, _ := newDockerHarness(t)
	h.putSecret("nfs-pw", "1", "password", "pw")
	h.run(flexPod("nf"))
	st := h.rec.waitPhase(t, "nf", v4.StatusFailed)
	if !strings.Contains(st.Message, "this node has no FlexVolume drivers") {
		t.Errorf("message %q", st.Message)
	}
}

// A directory that does not exist has no mounts below it (Unescape is tested in
// internal/mountinfo).
func TestMountsBelowMissingDir(t *testing.T) {
	if _, err := mountsBelow("/nonexistent-dir"); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Error(err)
	}
}
