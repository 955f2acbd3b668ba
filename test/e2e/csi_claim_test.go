package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/mountinfo"
)

func (c *csiCluster) claimLifecycle(t *testing.T, vol *v4.CSIVolume) {
	s, a := c.s, c.nodes["csi-a"]
	s.applySpec(t, claimingProcess("writer", "data", ""))
	tg := s.running(t, "e2e-csi", "writer", 1)[0]
	if tg.Spec.Node != "csi-a" {
		t.Fatalf("the claiming process runs on %s; the volume is accessible on csi-a only", tg.Spec.Node)
	}
	logFile := filepath.Join(c.dataDir("csi-a", vol), "log")
	waitUntil(t, 30*time.Second, "the process wrote through the volume", func() bool {
		b, err := os.ReadFile(logFile)
		return err == nil && string(b) == "started\n"
	})
	claims := c.volume(t, "data").Status.Claims
	if len(claims) != 1 || claims[0].TaskGroup != tg.Metadata.Name || claims[0].Node != "csi-a" || claims[0].Mode != "write" ||
		len(claims[0].PublishContext) == 0 {
		t.Errorf("volume claims %+v: want the writer's on csi-a with a publish context", claims)
	}
	if r := s.berth("", "delete", "volume", "data", "-n", "e2e-csi"); r.code == 0 || !strings.Contains(r.stderr, "claim") {
		t.Errorf("deleting a claimed volume: exit %d, %s%s; want a refusal naming the claim", r.code, r.stdout, r.stderr)
	}
	targets := mountsUnder(t, a.dataDir)
	if len(targets) < 1 {
		t.Fatalf("nothing is mounted under the agent's data dir while the volume is published")
	}

	a.kill()
	restarted := time.Now()
	a.start()
	waitUntil(t, 30*time.Second, "the pod adopted", func() bool {
		tgs := s.taskGroups("e2e-csi", "writer")
		return len(tgs) == 1 && tgs[0].Status.Phase == v4.StatusRunning && tgs[0].Status.Updated.After(restarted)
	})
	if got := mountsUnder(t, a.dataDir); len(got) != len(targets) {
		t.Errorf("mounts after the agent's restart %v, before %v", got, targets)
	}
	if b, _ := os.ReadFile(logFile); string(b) != "started\n" {
		t.Errorf("the process started again across the agent's restart: %q", b)
	}

	s.mustBerth("delete", "process", "writer", "-n", "e2e-csi")
	waitUntil(t, 30*time.Second, "the writer's task group gone", func() bool { return len(s.taskGroups("e2e-csi", "writer")) == 0 })
	waitUntil(t, 30*time.Second, "the volume unpublished, unstaged and released", func() bool {
		v := c.volume(t, "data")
		return len(mountsUnder(t, a.dataDir)) == 0 && v != nil && len(v.Status.Claims) == 0
	})
	if b, err := os.ReadFile(logFile); err != nil || string(b) != "started\n" {
		t.Errorf("the volume's data after the process went: %q, %v", b, err)
	}
}

// topologyRefused plans a claim pinned to csi-b, where the volume is not accessible.
func (c *csiCluster) topologyRefused(t *testing.T) {
	spec := writeFiles(t, map[string]string{"p.json": claimingProcess("elsewhere", "data",
		`"constraint":{"intersectionItem":[{"unionData":[{"name":"hostname","operate":"CLUSTER","type":3,"text":{"value":"csi-b"}}]}]},`)})
	r := c.s.berth("", "plan", "-f", spec)
	if r.code != 2 || !strings.Contains(r.stdout, "volume data") {
		t.Errorf("berth plan of a claim on csi-b: exit %d, want 2 and the volume named\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func (c *csiCluster) deleteVolume(t *testing.T, vol *v4.CSIVolume) {
	c.s.mustBerth("delete", "volume", "data", "-n", "e2e-csi")
	waitUntil(t, 30*time.Second, "the volume object gone", func() bool { return c.volume(t, "data") == nil })
	if _, err := os.Stat(filepath.Dir(c.dataDir("csi-a", vol))); !os.IsNotExist(err) {
		t.Errorf("the plugin still has the volume's directory: %v", err)
	}
}

// mountsUnder lists the mount points below dir.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	mps, err := mountinfo.Below(mountinfo.Self, dir)
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(mps, func(mp string) bool { return mp == filepath.Clean(dir) })
}
