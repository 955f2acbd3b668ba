package executor

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/fake"
)

const testPluginName = "hostpath.csi.k8s.io"

func csiPluginVolumes() []v4.PodVolume {
	return []v4.PodVolume{{Name: "sock", CSIPlugin: &v4.CSIPluginSource{Name: testPluginName}}}
}

// A plugin process gets its socket directory linked and its socket as CSI_ENDPOINT;
// the directory is made under the plugin dir, not the pod's.
func TestCSIPluginVolumeOfProcesses(t *testing.T) {
	plugins := filepath.Join(t.TempDir(), "plugins")
	h := newHarness(t, func(c *Config) { c.CSIPluginDir = plugins })
	tg := processTG("plug", v4.ProcessTask{ProcName: "p", StartCmd: "./p", Volumes: []v4.Volume{{Volume: v4.VolumeMount{MountPath: "csi", PodVolume: "sock"}}}})
	tg.Spec.Template.Spec.Volumes = csiPluginVolumes()
	h.run(tg)
	h.rec.waitPhase(t, "plug", v4.StatusRunning)
	dir := filepath.Join(plugins, testPluginName)
	p, _ := h.proc.Task(id("plug", "p"))
	if !slices.Equal(p.Links, []driver.Link{{Path: "csi", Target: dir}}) {
		t.Errorf("links %+v", p.Links)
	}
	if !slices.Contains(p.Env, "CSI_ENDPOINT=unix://"+dir+"/csi.sock") {
		t.Errorf("env %v has no CSI_ENDPOINT", p.Env)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode() != os.ModeDir|0o750 {
		t.Errorf("plugin dir %v %v", fi, err)
	}
}

// A plugin container gets its socket directory at its mount path and the agent's data
// dir at the same path, rshared, so its mounts onto pods' volumes reach the node.
func TestCSIPluginVolumeOfContainers(t *testing.T) {
	table := filepath.Join(t.TempDir(), "mountinfo")
	// The root is shared: nothing needs mounting to share the data dir.
	if err := os.WriteFile(table, []byte("27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := mountInfo
	mountInfo = table
	t.Cleanup(func() { mountInfo = old })
	plugins := filepath.Join(t.TempDir(), "plugins")
	dk := fake.NewDocker(testPodIP)
	h := newHarness(t, func(c *Config) { c.Drivers["docker"], c.CSIPluginDir = dk, plugins })
	h.docker = dk.Driver
	tg := containerTG("plugc", "plugin")
	tg.Spec.Template.Spec.Volumes = csiPluginVolumes()
	tg.Spec.Template.Spec.Containers[0].Volumes = []v4.Volume{{Volume: v4.VolumeMount{MountPath: "/csi", PodVolume: "sock"}}}
	h.run(tg)
	h.rec.waitPhase(t, "plugc", v4.StatusRunning)
	c, _ := dk.Task(id("plugc", "plugin"))
	want := []driver.Mount{
		{HostPath: filepath.Join(plugins, testPluginName), ContainerPath: "/csi"},
		{HostPath: h.dir, ContainerPath: h.dir, Propagation: driver.PropagationRShared},
	}
	if !slices.Equal(c.Setup.Volumes, want) {
		t.Errorf("mounts %+v, want %+v", c.Setup.Volumes, want)
	}
	for _, e := range c.Env {
		if strings.HasPrefix(e, "CSI_ENDPOINT=") {
			t.Errorf("a container got %s: its socket is at its own mount path", e)
		}
	}
}

// A node without a plugin dir fails the pod, naming the volume.
func TestCSIPluginVolumeWithoutPluginDir(t *testing.T) {
	h := newHarness(t)
	tg := processTG("nodir", v4.ProcessTask{ProcName: "p", StartCmd: "./p"})
	tg.Spec.Template.Spec.Volumes = csiPluginVolumes()
	h.run(tg)
	st := h.rec.waitPhase(t, "nodir", v4.StatusFailed)
	if !strings.Contains(st.Message, "volume sock") || !strings.Contains(st.Message, "no CSI plugin directory") {
		t.Errorf("message %q", st.Message)
	}
}

func TestMountOf(t *testing.T) {
	table := filepath.Join(t.TempDir(), "mountinfo")
	os.WriteFile(table, []byte(strings.Join([]string{
		"27 1 254:0 / / rw,relatime - ext4 /dev/vda rw",
		"42 27 254:0 /var/lib/docker /var/lib/docker rw,relatime shared:1 - ext4 /dev/vda rw",
		"43 27 254:0 /var/lib/berth /var/lib/berth rw master:3 - ext4 /dev/vda rw",
		"44 27 0:5 / /var/lib/berth\\040x rw shared:9 - tmpfs t rw",
	}, "\n")+"\n"), 0o600)
	old := mountInfo
	mountInfo = table
	t.Cleanup(func() { mountInfo = old })
	for _, c := range []struct {
		dir, mp string
		shared  bool
	}{
		{"/var/lib/docker/x", "/var/lib/docker", true},
		{"/var/lib/berth/agent", "/var/lib/berth", false},
		{"/var/lib/berth x", "/var/lib/berth x", true},
		{"/srv", "/", false},
	} {
		mp, shared, err := mountOf(c.dir)
		if err != nil || mp != c.mp || shared != c.shared {
			t.Errorf("%s: %s %t %v, want %s %t", c.dir, mp, shared, err, c.mp, c.shared)
		}
	}
}

// A data dir on a private mount is bound onto itself and shared, once: a second call
// finds it shared and mounts nothing more.
func TestEnsureShared(t *testing.T) {
	requireRoot(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmountBelow(dir) })
	if mp, shared, err := mountOf(dir); err != nil || shared && mp != dir {
		t.Skipf("the temp dir is on a shared mount already (%s, %v): nothing to test", mp, err)
	}
	for range 2 {
		if err := ensureShared(dir); err != nil {
			t.Fatal(err)
		}
	}
	if mp, shared, err := mountOf(dir); err != nil || mp != dir || !shared {
		t.Fatalf("mount of %s: %s shared=%t %v", dir, mp, shared, err)
	}
	if mps, _ := mountsBelow(dir); len(mps) != 1 {
		t.Errorf("mounts at %s: %v, want one", dir, mps)
	}
}
