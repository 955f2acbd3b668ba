package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// csiPluginImage is the test plugin (test/csiplugin) in an image, built by the test.
const csiPluginImage = "test/berth-csiplugin:1"

// TestCSIPluginContainer runs berth's test CSI plugin as a container (docs/volumes.md,
// "Plugins"): its csiPlugin volume puts its socket in the agent's plugin dir, where the
// node finds it and reports it; the container has the agent's data dir at the same path
// with rshared propagation (Docker refuses that bind unless the agent made the data dir,
// under a private /tmp here, a shared mount); the plugin gone, the node reports none.
func TestCSIPluginContainer(t *testing.T) {
	requireDocker(t)
	buildPluginImage(t)
	s := startServer(t, t.TempDir())
	a := startDockerAgent(t, s, "csi-c", "33600-33649", "--allow-privileged")
	// The agent bound its data dir onto itself to share it, and leaves it so (its
	// workloads outlive it): the test undoes it, or its temp dir cannot go.
	t.Cleanup(func() { syscall.Unmount(a.dataDir, syscall.MNT_DETACH) })
	s.cleanupApps("e2e-csic")
	s.applySpec(t, fmtSpec(`{"apiVersion":"v4","kind":"application","metadata":{"name":"plugin","namespace":"e2e-csic"},
	"restartPolicy":{"policy":"Never"},"killPolicy":{"gracePeriod":2},
	"spec":{"instance":1,"template":{"spec":{"networkMode":"NONE",
		"volumes":[{"name":"socket","csiPlugin":{"name":%q}}],
		"containers":[{"name":"plugin","image":%q,"command":"/csiplugin",
			"args":["--endpoint","unix:///csi/csi.sock","--root","/tmp/root","--nodeid","csi-c"],
			"volumes":[{"volume":{"mountPath":"/csi","podVolume":"socket"}}],
			"resources":{"requests":{"cpu":"0.1","memory":"32"}}}]}}}}`, csiPluginName, csiPluginImage))
	c := &csiCluster{s: s}
	waitUntil(t, 60*time.Second, "node csi-c reports a healthy "+csiPluginName, func() bool {
		for _, p := range c.node(t, "csi-c").Status.CSIPlugins {
			if p.Name == csiPluginName && p.Healthy && p.Node && p.Controller {
				return p.NodeID == "csi-c"
			}
		}
		return false
	})
	ids := nodeContainers(t, "csi-c", false)
	if len(ids) != 1 {
		t.Fatalf("containers of csi-c: %v", ids)
	}
	mounts := inspect(t, ids[0], `{{range .Mounts}}{{.Destination}}={{.Propagation}} {{end}}`)
	if !strings.Contains(mounts, a.dataDir+"=rshared") {
		t.Errorf("mounts %s: want the data dir %s rshared", mounts, a.dataDir)
	}
	if fi, err := os.Stat(filepath.Join(a.dataDir, "csi", "plugins", csiPluginName)); err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("the plugin's socket dir: %v %v", fi, err)
	}
	s.mustBerth("delete", "application", "plugin", "-n", "e2e-csic")
	waitUntil(t, 60*time.Second, "node csi-c reports no plugin", func() bool {
		return len(c.node(t, "csi-c").Status.CSIPlugins) == 0
	})
}

// buildPluginImage builds the static test plugin into an image on top of the test
// image, and removes it when the test ends.
func buildPluginImage(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "csiplugin"), "github.com/berthhq/berth/test/csiplugin")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the test plugin: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM "+testImage+"\nCOPY csiplugin /csiplugin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	img := exec.Command("docker", "build", "-q", "-t", csiPluginImage, dir)
	img.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	if out, err := img.CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", csiPluginImage).Run() })
}
