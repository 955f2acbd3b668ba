package executor

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// putConfigMap stores configmap name at version rv with the keys given.
func (h *harness) putConfigMap(name, rv string, kv ...string) {
	cm := &v4.ConfigMap{Datas: map[string]v4.ConfigMapData{}}
	cm.Metadata.Namespace, cm.Metadata.Name, cm.Metadata.ResourceVersion = testNS, name, rv
	for i := 0; i+1 < len(kv); i += 2 {
		cm.Datas[kv[i]] = v4.ConfigMapData{Type: "file", Content: b64(kv[i+1])}
	}
	h.data.configs[testNS+"/"+name] = cm
}

func (h *harness) putSecret(name, rv string, kv ...string) {
	s := &v4.Secret{Datas: map[string]v4.SecretData{}}
	s.Metadata.Namespace, s.Metadata.Name, s.Metadata.ResourceVersion = testNS, name, rv
	for i := 0; i+1 < len(kv); i += 2 {
		s.Datas[kv[i]] = v4.SecretData{Content: b64(kv[i+1])}
	}
	h.data.secrets[testNS+"/"+name] = s
}

// volumePod is a pod of two containers sharing an emptyDir, the first also mounting a
// configmap (asked read-write: it is read-only all the same) and a secret.
func volumePod(name string) *v4.TaskGroup {
	tg := containerTG(name, "writer", "reader")
	spec := &tg.Spec.Template.Spec
	spec.Volumes = []v4.PodVolume{
		{Name: "scratch", EmptyDir: &v4.EmptyDirVolume{}},
		{Name: "conf", ConfigMap: &v4.ConfigMapVolume{Name: "app-conf"}},
		{Name: "pw", Secret: &v4.SecretVolume{SecretName: "app-pw", Items: []v4.KeyToPath{
			{Key: "token", Path: "auth/token"}, {Key: "cert", Path: "cert.pem", Mode: new(0o440)}}}},
	}
	spec.Containers[0].Volumes = []v4.Volume{
		{Volume: v4.VolumeMount{MountPath: "/scratch", PodVolume: "scratch"}},
		{Volume: v4.VolumeMount{MountPath: "/etc/app", PodVolume: "conf"}},
		{Volume: v4.VolumeMount{MountPath: "/run/pw", PodVolume: "pw"}},
	}
	spec.Containers[1].Volumes = []v4.Volume{{Volume: v4.VolumeMount{MountPath: "/in", PodVolume: "scratch", ReadOnly: true}}}
	return tg
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPodVolumesOfContainers(t *testing.T) {
	h, d := newDockerHarness(t)
	h.putConfigMap("app-conf", "1", "app.conf", "v=1", "other", "o")
	h.putSecret("app-pw", "7", "token", "s3cret", "cert", "CERT")
	vols := filepath.Join(PodDir(h.dir, testNS, "vp"), "volumes")
	var seenAtStart []string
	d.SetStartHook(func(_ context.Context, t *driver.Task) error {
		if seenAtStart == nil { // the first task to start finds every volume made
			seenAtStart, _ = filepath.Glob(filepath.Join(vols, "*"))
		}
		return nil
	})
	h.run(volumePod("vp"))
	h.rec.waitPhase(t, "vp", v4.StatusRunning)
	if len(seenAtStart) != 3 {
		t.Errorf("volumes at the first start: %v", seenAtStart)
	}
	w, _ := d.Task(id("vp", "writer"))
	r, _ := d.Task(id("vp", "reader"))
	want := []driver.Mount{
		{HostPath: filepath.Join(vols, "scratch"), ContainerPath: "/scratch"},
		{HostPath: filepath.Join(vols, "conf"), ContainerPath: "/etc/app", ReadOnly: true},
		{HostPath: filepath.Join(vols, "pw"), ContainerPath: "/run/pw", ReadOnly: true},
	}
	if !slices.Equal(w.Setup.Volumes, want) {
		t.Errorf("writer's mounts %+v, want %+v", w.Setup.Volumes, want)
	}
	if got := r.Setup.Volumes; len(got) != 1 || got[0] != (driver.Mount{HostPath: filepath.Join(vols, "scratch"), ContainerPath: "/in", ReadOnly: true}) {
		t.Errorf("reader's mounts %+v", got)
	}
	// No container has a known user: anyone may write, nobody remove another's files.
	if fi, err := os.Stat(filepath.Join(vols, "scratch")); err != nil || fi.Mode() != os.ModeDir|os.ModeSticky|0o777 {
		t.Errorf("emptyDir %v %v", fi, err)
	}
	if got := readFile(t, filepath.Join(vols, "conf", "app.conf")); got != "v=1" {
		t.Errorf("app.conf %q", got)
	}
	if l, _ := os.Readlink(filepath.Join(vols, "conf", "app.conf")); l != "..data/app.conf" {
		t.Errorf("app.conf links to %q", l)
	}
	for p, mode := range map[string]os.FileMode{"conf/app.conf": 0o644, "pw/auth/token": 0o400, "pw/cert.pem": 0o440} {
		if fi, err := os.Stat(filepath.Join(vols, p)); err != nil || fi.Mode() != mode {
			t.Errorf("%s: %v %v, want mode %v", p, fi, err, mode)
		}
	}
	if got := readFile(t, filepath.Join(vols, "pw", "auth", "token")); got != "s3cret" {
		t.Errorf("token %q", got)
	}
}

// An update of the configmap is swapped in whole: a new version directory, ..data
// renamed over, the old one and the links of keys that went removed. A static volume
// stays as it was written.
func TestConfigMapVolumeFollowsUpdates(t *testing.T) {
	h, _ := newDockerHarness(t)
	h.putConfigMap("app-conf", "1", "app.conf", "v=1", "other", "o")
	h.putSecret("app-pw", "7", "token", "s3cret", "cert", "CERT")
	tg := volumePod("vu")
	tg.Spec.Template.Spec.Volumes[2].Secret.Static = true
	h.run(tg)
	h.rec.waitPhase(t, "vu", v4.StatusRunning)
	conf := filepath.Join(PodDir(h.dir, testNS, "vu"), "volumes", "conf")
	first, _ := os.Readlink(filepath.Join(conf, dataLink))
	if n := h.e.FollowedVolumes(testNS, "vu"); n != 1 {
		t.Fatal("the pod follows no volume")
	}
	if n, err := h.e.RefreshVolumes(context.Background(), testNS, "vu"); err != nil || n != 0 {
		t.Fatalf("refresh without a change wrote %d volumes, err %v", n, err)
	}
	h.putConfigMap("app-conf", "2", "app.conf", "v=2")
	h.putSecret("app-pw", "8", "token", "new", "cert", "CERT")
	if n, err := h.e.RefreshVolumes(context.Background(), testNS, "vu"); err != nil || n != 1 {
		t.Fatalf("refresh wrote %d volumes, err %v; want the configmap's only", n, err)
	}
	if got := readFile(t, filepath.Join(conf, "app.conf")); got != "v=2" {
		t.Errorf("app.conf after the update: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(conf, "other")); !os.IsNotExist(err) {
		t.Errorf("the link of a removed key stays: %v", err)
	}
	if _, err := os.Stat(filepath.Join(conf, first)); !os.IsNotExist(err) {
		t.Errorf("the old version %s stays: %v", first, err)
	}
	entries, _ := os.ReadDir(conf)
	if len(entries) != 3 { // ..data, one version, app.conf
		t.Errorf("volume holds %v", entries)
	}
	token := filepath.Join(PodDir(h.dir, testNS, "vu"), "volumes", "pw", "auth", "token")
	if got := readFile(t, token); got != "s3cret" {
		t.Errorf("a static secret volume changed: %q", got)
	}
	// A deleted configmap keeps the files.
	delete(h.data.configs, testNS+"/app-conf")
	if _, err := h.e.RefreshVolumes(context.Background(), testNS, "vu"); err == nil {
		t.Error("a configmap that is gone is no error")
	}
	if got := readFile(t, filepath.Join(conf, "app.conf")); got != "v=2" {
		t.Errorf("app.conf after the deletion: %q", got)
	}
	h.e.Kill(testNS, "vu")
	h.putConfigMap("app-conf", "3", "app.conf", "v=3")
	if n, _ := h.e.RefreshVolumes(context.Background(), testNS, "vu"); n != 0 {
		t.Error("a stopped pod's volume was rewritten")
	}
}

// A configmap key the volume takes as a file name must not name the volume's own
// entries (a configmap validated before pod volumes existed could hold one).
func TestConfigMapVolumeRefusesOwnNames(t *testing.T) {
	h, _ := newDockerHarness(t)
	h.putConfigMap("app-conf", "1", "..data", "x")
	h.putSecret("app-pw", "1", "token", "t", "cert", "c")
	h.run(volumePod("vk"))
	st := h.rec.waitPhase(t, "vk", v4.StatusFailed)
	if !strings.Contains(st.Message, "cannot be a file of the volume") {
		t.Errorf("message %q", st.Message)
	}
}

// A process's volume is a link in its work dir, which the process driver makes.
func TestPodVolumesOfProcesses(t *testing.T) {
	h := newHarness(t)
	tg := processTG("pv",
		v4.ProcessTask{ProcName: "a", StartCmd: "./a", Volumes: []v4.Volume{{Volume: v4.VolumeMount{MountPath: "shared", PodVolume: "cache"}}}},
		v4.ProcessTask{ProcName: "b", StartCmd: "./b", Volumes: []v4.Volume{{Volume: v4.VolumeMount{MountPath: "data/cache", PodVolume: "cache"}}}})
	tg.Spec.Template.Spec.Volumes = []v4.PodVolume{{Name: "cache", EmptyDir: &v4.EmptyDirVolume{}}}
	h.run(tg)
	h.rec.waitPhase(t, "pv", v4.StatusRunning)
	dir := filepath.Join(PodDir(h.dir, testNS, "pv"), "volumes", "cache")
	a, _ := h.proc.Task(id("pv", "a"))
	b, _ := h.proc.Task(id("pv", "b"))
	// A root agent runs processes without a user as a uid the process driver picks: the
	// directory is closed until the driver gives it to that uid. An agent that is not
	// root runs them as its own user, who owns it at once.
	give := os.Geteuid() == 0
	if !slices.Equal(a.Links, []driver.Link{{Path: "shared", Target: dir, Give: give}}) || !slices.Equal(b.Links, []driver.Link{{Path: "data/cache", Target: dir, Give: give}}) {
		t.Errorf("links %+v and %+v", a.Links, b.Links)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode() != os.ModeDir|0o700 {
		t.Errorf("emptyDir %v %v", fi, err)
	}
}

// A disk emptyDir past its sizeLimit fails the pod, as the kubelet evicts it.
func TestDiskEmptyDirOverItsLimitEvicts(t *testing.T) {
	h, _ := newDockerHarness(t)
	h.e.cfg.VolumeUsageInterval = 5 * time.Millisecond
	tg := containerTG("big", "app")
	tg.Spec.Template.Spec.Volumes = []v4.PodVolume{{Name: "scratch", EmptyDir: &v4.EmptyDirVolume{SizeLimit: "1"}}}
	tg.Spec.Template.Spec.Containers[0].Volumes = []v4.Volume{{Volume: v4.VolumeMount{MountPath: "/s", PodVolume: "scratch"}}}
	h.run(tg)
	h.rec.waitPhase(t, "big", v4.StatusRunning)
	dir := filepath.Join(PodDir(h.dir, testNS, "big"), "volumes", "scratch")
	if err := os.WriteFile(filepath.Join(dir, "small"), make([]byte, 512<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	if used, err := diskUsage(context.Background(), dir, 1<<30); err != nil || used < 512<<10 || used > 1<<20 {
		t.Fatalf("usage %d (%v), want about 512 KiB", used, err)
	}
	if st := h.rec.all("big"); st[len(st)-1].Phase != v4.StatusRunning {
		t.Fatalf("evicted under the limit: %+v", st[len(st)-1])
	}
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	st := h.rec.waitPhase(t, "big", v4.StatusFailed)
	if !strings.Contains(st.Message, "evicted: emptyDir scratch uses more than its sizeLimit of 1 MB") || st.HealthKilled {
		t.Errorf("status %q, healthKilled %v", st.Message, st.HealthKilled)
	}
}
