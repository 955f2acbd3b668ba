package e2e

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The pod's own volumes against the real binary (docs/pods.md, "Volumes"), on one node
// the cases share: an emptyDir two containers share, one two processes share, a Memory
// emptyDir that is a tmpfs of its size, and a configmap volume that follows an update of
// the configmap in a running container.
func TestPodVolumes(t *testing.T) {
	s, a := startDockerNode(t, "dk-vol", "33550-33599")
	t.Run("an emptyDir shared by two containers", func(t *testing.T) { emptyDirContainers(t, s) })
	t.Run("an emptyDir shared by two processes", func(t *testing.T) { emptyDirProcesses(t, s, a) })
	t.Run("a Memory emptyDir is a tmpfs of its size", func(t *testing.T) { memoryEmptyDir(t, s, a) })
	t.Run("a configmap volume follows updates", func(t *testing.T) { configMapFollows(t, s) })
}

// withPodVolumes puts the pod volumes (JSON list items) in an application's pod.
func withPodVolumes(spec, volumes string) string {
	return strings.Replace(spec, `"containers":[`, `"volumes":[`+volumes+`],"containers":[`, 1)
}

func emptyDirContainers(t *testing.T, s *devServer) {
	spec := withPodVolumes(appSpec{name: "shared", ns: "e2e", containers: []string{
		container("writer", "echo hello > /shared/msg; exec sleep 100000", `,"volumes":[{"volume":{"mountPath":"/shared","podVolume":"scratch"}}]`),
		container("reader", "exec sleep 100000", `,"volumes":[{"volume":{"mountPath":"/in","podVolume":"scratch","readOnly":true}}]`),
	}}.json(), `{"name":"scratch","emptyDir":{}}`)
	s.applySpec(t, spec)
	tg := s.running(t, "e2e", "shared", 1)[0]
	if r := s.execIn("e2e", tg.Metadata.Name, "reader", "cat", "/in/msg"); r.code != 0 || r.stdout != "hello\n" {
		t.Errorf("the reader sees %q (exit %d, %s), want the writer's hello", r.stdout, r.code, r.stderr)
	}
	if r := s.execIn("e2e", tg.Metadata.Name, "reader", "sh", "-c", "echo x > /in/other"); r.code == 0 {
		t.Error("the reader wrote through its read-only mount")
	}
	s.mustBerth("delete", "application", "shared", "-n", "e2e")
}

func emptyDirProcesses(t *testing.T, s *devServer, a *agentProc) {
	const spec = `{"apiVersion":"v4","kind":"process","metadata":{"name":"pshared","namespace":"e2e"},
	"restartPolicy":{"policy":"Never"},"killPolicy":{"gracePeriod":1},
	"spec":{"instance":1,"template":{"spec":{"volumes":[{"name":"cache","emptyDir":{}}],"processes":[
		{"procName":"sleep","startCmd":"echo from-a > shared/note; exec sleep 100000","startGracePeriod":1,
		 "workPath":"${work_base_dir}/a","volumes":[{"volume":{"mountPath":"shared","podVolume":"cache"}}],
		 "resources":{"limits":{"cpu":"0.1","memory":"32"}}},
		{"procName":"sleep","startCmd":"exec sleep 100000","startGracePeriod":1,
		 "workPath":"${work_base_dir}/b","volumes":[{"volume":{"mountPath":"data/cache","podVolume":"cache"}}],
		 "resources":{"limits":{"cpu":"0.1","memory":"32"}}}]}}}}`
	s.applySpec(t, spec)
	tg := s.running(t, "e2e", "pshared", 1)[0]
	second := tg.Status.Tasks[1].Name
	if r := s.execIn("e2e", tg.Metadata.Name, second, "cat", "data/cache/note"); r.code != 0 || r.stdout != "from-a\n" {
		t.Errorf("the second process sees %q (exit %d, %s), want the first's note", r.stdout, r.code, r.stderr)
	}
	dir := filepath.Join(a.dataDir, "pods", "e2e."+tg.Metadata.Name)
	if l, err := os.Readlink(filepath.Join(dir, "work", "b", "data", "cache")); err != nil || l != filepath.Join(dir, "volumes", "cache") {
		t.Errorf("the second process's link %q (%v)", l, err)
	}
	s.mustBerth("delete", "process", "pshared", "-n", "e2e")
	waitUntil(t, 60*time.Second, "the process pod's directory to go", func() bool {
		_, err := os.Stat(dir)
		return os.IsNotExist(err)
	})
}

func memoryEmptyDir(t *testing.T, s *devServer, a *agentProc) {
	spec := withPodVolumes(appSpec{name: "shm", ns: "e2e", containers: []string{
		container("app", "exec sleep 100000", `,"volumes":[{"volume":{"mountPath":"/shm","podVolume":"mem"}}],`+
			`"resources":{"requests":{"cpu":"0.1","memory":"32"},"limits":{"memory":"64"}}`),
	}}.json(), `{"name":"mem","emptyDir":{"medium":"Memory","sizeLimit":"16"}}`)
	s.applySpec(t, spec)
	tg := s.running(t, "e2e", "shm", 1)[0]
	r := s.execIn("e2e", tg.Metadata.Name, "app", "cat", "/proc/mounts")
	var line string
	for l := range strings.SplitSeq(r.stdout, "\n") {
		if f := strings.Fields(l); len(f) > 3 && f[1] == "/shm" {
			line = l
		}
	}
	if !strings.HasPrefix(line, "tmpfs ") || !strings.Contains(line, "size=16384k") {
		t.Errorf("/shm in the container: %q, want a tmpfs of 16 MiB (exit %d)", line, r.code)
	}
	dir := filepath.Join(a.dataDir, "pods", "e2e."+tg.Metadata.Name, "volumes", "mem")
	s.mustBerth("delete", "application", "shm", "-n", "e2e")
	waitUntil(t, 60*time.Second, "the tmpfs to be unmounted", func() bool {
		b, _ := os.ReadFile("/proc/self/mountinfo")
		return !strings.Contains(string(b), " "+dir+" ")
	})
}

func configMapSpec(content string) string {
	return fmtSpec(`{"apiVersion":"v4","kind":"configmap","metadata":{"name":"vol-conf","namespace":"e2e"},
	"datas":{"app.conf":{"type":"file","content":%q}}}`, base64.StdEncoding.EncodeToString([]byte(content)))
}

func configMapFollows(t *testing.T, s *devServer) {
	s.applySpec(t, configMapSpec("v1"))
	s.applySpec(t, fmtSpec(`{"apiVersion":"v4","kind":"secret","metadata":{"name":"vol-pw","namespace":"e2e"},
	"datas":{"token":{"content":%q}}}`, base64.StdEncoding.EncodeToString([]byte("s3cret"))))
	spec := withPodVolumes(appSpec{name: "follow", ns: "e2e", containers: []string{
		container("app", "exec sleep 100000", `,"volumes":[{"volume":{"mountPath":"/etc/app","podVolume":"conf"}},`+
			`{"volume":{"mountPath":"/run/pw","podVolume":"pw"}}]`),
	}}.json(), `{"name":"conf","configMap":{"name":"vol-conf"}},{"name":"pw","secret":{"secretName":"vol-pw","items":[{"key":"token","path":"auth/token"}]}}`)
	s.applySpec(t, spec)
	tg := s.running(t, "e2e", "follow", 1)[0]
	if r := s.execIn("e2e", tg.Metadata.Name, "app", "cat", "/etc/app/app.conf"); r.stdout != "v1" {
		t.Fatalf("app.conf says %q (exit %d, %s)", r.stdout, r.code, r.stderr)
	}
	// The server gave the node the secret: the task group refers to it by its volume.
	if r := s.execIn("e2e", tg.Metadata.Name, "app", "cat", "/run/pw/auth/token"); r.stdout != "s3cret" {
		t.Errorf("the secret's token says %q (exit %d, %s)", r.stdout, r.code, r.stderr)
	}
	s.applySpec(t, configMapSpec("v2"))
	changed := time.Now()
	// The refresh runs every 10 s (±20%), plus the round's own time.
	waitUntil(t, 40*time.Second, "the update in the running container", func() bool {
		return s.execIn("e2e", tg.Metadata.Name, "app", "cat", "/etc/app/app.conf").stdout == "v2"
	})
	t.Logf("the update reached the container after %s", time.Since(changed).Round(100*time.Millisecond))
	s.mustBerth("delete", "application", "follow", "-n", "e2e")
	s.mustBerth("delete", "configmap", "vol-conf", "-n", "e2e")
	s.mustBerth("delete", "secret", "vol-pw", "-n", "e2e")
}
