package process

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestSandboxResolve(t *testing.T) {
	base := t.TempDir()
	work, run, vol := filepath.Join(base, "pod", "work"), filepath.Join(base, "pod", "run"), filepath.Join(base, "vol")
	keys := filepath.Join(vol, "keys")
	for _, d := range []string{work, run, keys} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A link in a host volume into a protected directory does not carry a path there.
	if err := os.Symlink(keys, filepath.Join(vol, "to-keys")); err != nil {
		t.Fatal(err)
	}
	sb := sandbox{pod: []string{work, run}, host: []string{vol}, protected: []string{keys, "/proc"}}
	for _, c := range []struct {
		path     string
		wantBase string
		err      string
	}{
		{work, work, ""},
		{filepath.Join(work, "a/b"), work, ""},
		{filepath.Join(run, "app.pid"), run, ""},
		{filepath.Join(vol, "app"), vol, ""},
		{work + "/../..", "", "'..' segment"},
		{filepath.Join(base, "pod"), "", "outside the pod's directories"},
		{"/etc/shadow", "", "outside the pod's directories"},
		{filepath.Join(keys, "ca.key"), "", "no task may reach"},
		{filepath.Join(vol, "to-keys", "ca.key"), "", "no task may reach"},
		{"/proc/1/environ", "", "no task may reach"},
		{"relative", "", "not an absolute path"},
		{"", "", "empty path"},
	} {
		pl, err := sb.resolve("path", c.path)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want an error with %q", c.path, err, c.err)
			}
			continue
		}
		if err != nil || pl.base != c.wantBase {
			t.Errorf("%q: %+v %v, want base %s", c.path, pl, err, c.wantBase)
		}
	}
}

// A pid file is the tenant's: what it names must be the task's own process, and what it
// holds or points to is never shown. A link to a root-only file, a FIFO, a huge file or
// the pid of an unrelated process fail the start, and the unrelated process lives on;
// the pid of a process that ended fails it with what that process wrote.
func TestPidFileCannotReachOutside(t *testing.T) {
	requireCgroups(t)
	t.Parallel()
	outside := t.TempDir()
	secret := filepath.Join(outside, "root-only")
	if err := os.WriteFile(secret, []byte("0123456789abcdef-not-a-pid-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	bystander := exec.Command("sleep", "60")
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bystander.Process.Kill(); bystander.Wait() })
	d := newTestDriver(t, "")
	for i, c := range []struct {
		name string
		cmd  string // run by the task's shell, with $PF the pid file
		want string
	}{
		{"link to a root-only file", "ln -s " + secret + " $PF; exec sleep 60", "escapes"},
		{"a fifo", "mkfifo $PF; exec sleep 60", "not a regular file"},
		{"a huge file", "head -c 100000 /dev/zero > $PF; exec sleep 60", "larger than a pid"},
		{"an unrelated process", "echo " + strconv.Itoa(bystander.Process.Pid) + " > $PF; exec sleep 60", "not one of the task's"},
		{"a process that ended", "sh -c 'echo $$ > app.pid; echo bind: address already in use'; exec sleep 60", "not running: bind: address already in use"},
	} {
		t.Run(c.name, func(t *testing.T) {
			task := testTask(t, "ns.pidfile"+strconv.Itoa(i)+".sleep", &v4.ProcessTask{ProcName: "sleep", StartGracePeriod: 1, PidFile: "app.pid"})
			task.Process.StartCmd = "PF=app.pid; " + c.cmd
			start := time.Now()
			_, err := d.Start(t.Context(), task)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("start: %v, want an error with %q", err, c.want)
			}
			if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "0123456789") {
				t.Fatalf("the error shows what the pid file points to: %v", err)
			}
			if time.Since(start) > 20*time.Second {
				t.Fatalf("the start took %s", time.Since(start))
			}
			if err := syscall.Kill(bystander.Process.Pid, 0); err != nil {
				t.Fatalf("the unrelated process was signalled: %v", err)
			}
		})
	}
	if b, _ := os.ReadFile(secret); !strings.HasPrefix(string(b), "0123456789") {
		t.Fatalf("the root-only file changed: %q", b)
	}
}

// A workPath or pidFile with '..' is refused before anything is created, and an existing
// directory outside the pod's is never given to the task's user.
func TestPathsCannotClimbOut(t *testing.T) {
	u := nobody(t)
	t.Parallel()
	d := newTestDriver(t, "")
	for i, p := range []v4.ProcessTask{
		{WorkPath: "../.."},
		{PidFile: "../../../x.pid"},
		{URIs: []v4.URI{{Value: "file:///etc/passwd"}}},
		{URIs: []v4.URI{{Value: "file:///etc/passwd", OutputDir: "../../out"}}},
	} {
		p.ProcName, p.StartCmd, p.User = "sleep", "exec sleep 60", "nobody"
		task := testTask(t, "ns.climb"+strconv.Itoa(i)+".sleep", &p)
		if p.WorkPath != "" {
			p.WorkPath = filepath.Join(task.WorkBaseDir, p.WorkPath)
		}
		if _, err := d.Start(t.Context(), task); err == nil {
			t.Fatalf("%+v: started", p)
		}
		podDir := filepath.Dir(task.WorkBaseDir)
		for _, dir := range []string{filepath.Dir(podDir), podDir} {
			fi, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Sys().(*syscall.Stat_t).Uid == u.UID {
				t.Fatalf("%+v: %s was given to the task's user", p, dir)
			}
		}
	}
}

// No path, however spelled, resolves outside the pod's directories and the host volumes,
// nor into a protected directory.
func FuzzSandboxResolve(f *testing.F) {
	for _, s := range []string{"/pod/work/a", "/pod/work/../../etc", "/vol/keys/x", "/vol/./a//b", "/pod/workx",
		"/pod/run/", "/", "//pod/work", "/vol/a/../../pod/work", "/pod/work/\x00", "/vol/keys"} {
		f.Add(s)
	}
	sb := sandbox{pod: []string{"/pod/work", "/pod/run"}, host: []string{"/vol"}, protected: []string{"/vol/keys", "/proc"}}
	f.Fuzz(func(t *testing.T, p string) {
		pl, err := sb.resolve("path", p)
		if err != nil {
			return
		}
		if !filepath.IsLocal(pl.rel) && pl.rel != "." {
			t.Fatalf("%q: rel %q leaves its base", p, pl.rel)
		}
		if !slices.Contains(sb.pod, pl.base) && !slices.Contains(sb.host, pl.base) {
			t.Fatalf("%q: base %q is neither the pod's nor a host volume", p, pl.base)
		}
		full := filepath.Join(pl.base, pl.rel)
		if _, ok := below(full, pl.base); !ok {
			t.Fatalf("%q resolved to %s, outside %s", p, full, pl.base)
		}
		if !pl.pod {
			for _, dir := range sb.protected {
				if _, ok := below(full, dir); ok {
					t.Fatalf("%q resolved to %s, in protected %s", p, full, dir)
				}
			}
		}
	})
}
