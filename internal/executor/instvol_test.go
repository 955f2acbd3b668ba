package executor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/instvol"
)

// instancePod is run name of instance 1 of application app: its second container has an
// instance volume at /lain/logs.
func instancePod(name string) *v4.TaskGroup {
	tg := containerTG(name, "web", "logger")
	tg.Spec.Index = 1
	c := &tg.Spec.Template.Spec.Containers[1]
	c.Volumes = []v4.Volume{{Volume: v4.VolumeMount{MountPath: "/lain/logs", Instance: true}}}
	c.Parameters = []v4.Parameter{{Key: "user", Value: "1000:1001"}}
	return tg
}

// Two runs of one instance (a restart: another task group) mount the same directory of
// the node's instance volumes, which outlives the first run's removal.
func TestInstanceVolumeOutlivesTheRun(t *testing.T) {
	dirs := instvol.New(filepath.Join(t.TempDir(), "volumes"))
	h, d := newDockerHarness(t)
	h.e.cfg.InstanceVolumes = dirs
	h.run(instancePod("run1"))
	h.rec.waitPhase(t, "run1", v4.StatusRunning)
	task, _ := d.Task(id("run1", "logger"))
	want := filepath.Join(dirs.Root(), testNS, "application", "app", "1", "1", "lain%2Flogs")
	if len(task.Setup.Volumes) != 1 || task.Setup.Volumes[0].HostPath != want || task.Setup.Volumes[0].ContainerPath != "/lain/logs" {
		t.Fatalf("volumes %+v, want %s at /lain/logs", task.Setup.Volumes, want)
	}
	if os.Geteuid() == 0 {
		if fi, err := os.Stat(want); err != nil || fi.Mode().Perm() != 0o755 {
			t.Fatalf("directory %v %v", fi, err)
		}
	}
	if err := os.WriteFile(filepath.Join(want, "app.log"), []byte("run1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.e.Remove(context.Background(), testNS, "run1"); err != nil {
		t.Fatal(err)
	}
	h.run(instancePod("run2"))
	h.rec.waitPhase(t, "run2", v4.StatusRunning)
	task, _ = d.Task(id("run2", "logger"))
	if task.Setup.Volumes[0].HostPath != want {
		t.Fatalf("the second run mounts %s, want %s", task.Setup.Volumes[0].HostPath, want)
	}
	if b, _ := os.ReadFile(filepath.Join(want, "app.log")); string(b) != "run1" {
		t.Fatalf("the first run's file holds %q", b)
	}
}

func TestInstanceVolumeNeedsTheNodesDirectories(t *testing.T) {
	h, _ := newDockerHarness(t)
	h.run(instancePod("bare"))
	st := h.rec.waitPhase(t, "bare", v4.StatusFailed)
	if !strings.Contains(st.Message, "keeps no instance volumes") {
		t.Fatalf("message %q", st.Message)
	}
}

func TestContainerOwner(t *testing.T) {
	for _, tc := range []struct {
		user string
		want instvol.Owner
	}{
		{"", instvol.Owner{}},
		{"1000", instvol.Owner{UID: 1000, GID: 1000, Known: true}},
		{"1000:50", instvol.Owner{UID: 1000, GID: 50, Known: true}},
		{"app", instvol.Owner{}},
		{"1000:staff", instvol.Owner{}},
		{"-1", instvol.Owner{}},
		{"99999999999", instvol.Owner{}},
	} {
		c := &v4.Container{}
		if tc.user != "" {
			c.Parameters = []v4.Parameter{{Key: "user", Value: tc.user}}
		}
		if got := containerOwner(c); got != tc.want {
			t.Errorf("user %q: %+v, want %+v", tc.user, got, tc.want)
		}
	}
}
