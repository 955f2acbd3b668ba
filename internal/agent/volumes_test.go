package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver/fake"
)

// instanceTG is run name of instance 0 of application web, whose second container keeps
// an instance volume at /lain/logs.
func instanceTG(name string) *v4.TaskGroup {
	tg := containerTG(name)
	tg.Spec.Owner.Name = "web"
	tg.Spec.Template.Spec.Containers[1].Volumes = []v4.Volume{{Volume: v4.VolumeMount{MountPath: "/lain/logs", Instance: true}}}
	return tg
}

func deleteTG(t *testing.T, name string) {
	t.Helper()
	if _, err := tgs().Delete(context.Background(), testNS, name, ""); err != nil {
		t.Fatal(err)
	}
}

// An instance's volume directory outlives a restart (its run deleted once ended, a new
// run of the same instance on the node) and goes when the instance is stopped for good
// and deleted.
func TestInstanceVolumeKeptAcrossRunsAndRemovedForGood(t *testing.T) {
	c := newCluster(t)
	dir := t.TempDir()
	startAgent(t, c, dir, fake.New("process"), func(cfg *Config) {
		cfg.Drivers["docker"] = fake.NewDocker("10.88.0.2")
	})
	vol := filepath.Join(dir, "volumes", testNS, "application", "web", "0", "1", "lain%2Flogs")
	createTG(t, instanceTG("0.web.ns-a.c.1"))
	waitPhase(t, "0.web.ns-a.c.1", v4.StatusRunning)
	if err := os.WriteFile(filepath.Join(vol, "app.log"), []byte("first run"), 0o644); err != nil {
		t.Fatal(err)
	}

	// A restart: the controller deletes the ended run and places its replacement.
	editTG(t, "0.web.ns-a.c.1", func(tg *v4.TaskGroup) { tg.Status.Phase = v4.StatusFailed })
	deleteTG(t, "0.web.ns-a.c.1")
	createTG(t, instanceTG("0.web.ns-a.c.2"))
	waitPhase(t, "0.web.ns-a.c.2", v4.StatusRunning)
	waitFor(t, "the first run's pod directory to go", func() bool {
		_, err := os.Stat(filepath.Join(dir, "pods", testNS+".0.web.ns-a.c.1"))
		return os.IsNotExist(err)
	})
	if b, err := os.ReadFile(filepath.Join(vol, "app.log")); string(b) != "first run" {
		t.Fatalf("after the restart the file holds %q (%v)", b, err)
	}

	// Its workload deleted: stopped for good (spec.desired, the controller's mark), then
	// deleted.
	editTG(t, "0.web.ns-a.c.2", func(tg *v4.TaskGroup) {
		tg.Spec.Desired = v4.DesiredStopped
		tg.Metadata.Annotations = map[string]string{v4.InstanceEndsAnnotation: "true"}
	})
	waitPhase(t, "0.web.ns-a.c.2", v4.StatusFinish)
	deleteTG(t, "0.web.ns-a.c.2")
	waitFor(t, "the instance's directories to go", func() bool {
		_, err := os.Stat(filepath.Join(dir, "volumes", testNS))
		return os.IsNotExist(err)
	})
}

// A task group the server binds to another node takes its instance off this one: its
// directory goes once its pod is removed, while another instance's stays.
func TestInstanceVolumeGoesWhenBoundElsewhere(t *testing.T) {
	c := newCluster(t)
	dir := t.TempDir()
	startAgent(t, c, dir, fake.New("process"), func(cfg *Config) {
		cfg.Drivers["docker"] = fake.NewDocker("10.88.0.2")
	})
	other := instanceTG("1.web.ns-a.c.1")
	other.Spec.Index = 1
	createTG(t, instanceTG("0.web.ns-a.c.1"))
	createTG(t, other)
	waitPhase(t, "0.web.ns-a.c.1", v4.StatusRunning)
	waitPhase(t, "1.web.ns-a.c.1", v4.StatusRunning)
	editTG(t, "0.web.ns-a.c.1", func(tg *v4.TaskGroup) { tg.Spec.Node = "elsewhere" })
	waitFor(t, "instance 0's directory to go", func() bool {
		_, err := os.Stat(filepath.Join(dir, "volumes", testNS, "application", "web", "0"))
		return os.IsNotExist(err)
	})
	if _, err := os.Stat(filepath.Join(dir, "volumes", testNS, "application", "web", "1", "1", "lain%2Flogs")); err != nil {
		t.Fatalf("instance 1's directory: %v", err)
	}
}
