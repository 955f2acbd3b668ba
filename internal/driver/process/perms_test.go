package process

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// nobody returns the credential of the user nobody; it skips without root (which
// switching users needs), or fails where CI says root is there (BERTH_REQUIRE_CGROUPS=1).
func nobody(t *testing.T) *credential {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("BERTH_REQUIRE_CGROUPS") == "1" {
			t.Fatal("needs root to run a process as nobody, and BERTH_REQUIRE_CGROUPS=1")
		}
		t.Skip("needs root to run a process as nobody (set BERTH_REQUIRE_CGROUPS=1 to fail instead)")
	}
	c, err := lookupUser("nobody")
	if err != nil {
		t.Skipf("no user nobody on this host: %v", err)
	}
	return c
}

// nobodyTask is testTask with the pod's directories laid out as the executor does: the
// directories above them and they themselves 0711, so another user passes through them
// but cannot list them (t.TempDir makes 0700 directories, as closed as the agent's data
// dir used to be).
func nobodyTask(t *testing.T, id string, p *v4.ProcessTask) *driver.Task {
	t.Helper()
	task := testTask(t, id, p)
	base := filepath.Dir(task.WorkBaseDir)
	for dir := base; dir != "/" && dir != os.TempDir(); dir = filepath.Dir(dir) {
		if err := os.Chmod(dir, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{task.WorkBaseDir, task.RunBaseDir, task.LogDir} {
		if err := os.Chmod(dir, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	return task
}

// wantOwned checks path's owner and permission bits (mode 0: any).
func wantOwned(t *testing.T, path string, uid uint32, mode os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Error(err)
		return
	}
	if got := fileUID(t, path); got != uid || mode != 0 && fi.Mode().Perm() != mode {
		t.Errorf("%s: owner %d mode %v, want owner %d mode %v", path, got, fi.Mode().Perm(), uid, mode)
	}
}

// A process of user nobody starts: it reaches its work dir through the closed pod
// directories, writes there, reads its secret file, opens its own log again
// (/dev/stdout), and writes into a package directory the archive does not list. Its
// secret file and log are its own, readable by nobody else.
func TestStartAsNobody(t *testing.T) {
	requireCgroups(t)
	u := nobody(t)
	t.Parallel()
	pkg := buildTarGz(t, []archiveEntry{{Name: "app/bin/run.sh", Body: "#!/bin/sh\nexec sleep 30\n", Mode: 0o755}})
	pkgFile := filepath.Join(t.TempDir(), "app.tar.gz")
	if err := os.WriteFile(pkgFile, pkg, 0o600); err != nil { // read by the agent, not the user
		t.Fatal(err)
	}
	const script = `cat db.pass > copy.txt || exit 3
echo "to my log" > /dev/stdout || exit 4
touch mine || exit 5
`
	tests := []struct {
		name string
		// setup fills in the spec; it returns the work dir the process must run in, which
		// berth creates or owns (the pod's), so it becomes the user's with mode 0700.
		setup func(task *driver.Task) string
	}{
		{"default work dir", func(task *driver.Task) string {
			task.Process.StartCmd = script + "exec sleep 30"
			return task.WorkBaseDir
		}},
		{"workPath and pidFile in the pod's dirs", func(task *driver.Task) string {
			task.Process.WorkPath = filepath.Join(task.WorkBaseDir, "gamesvc")
			task.Process.PidFile = filepath.Join(task.RunBaseDir, "pid", "gamesvc.pid")
			task.Process.StartCmd = script + "echo $$ > " + task.Process.PidFile + " || exit 6; exec sleep 30"
			return task.Process.WorkPath
		}},
		{"package unpacked for the user", func(task *driver.Task) string {
			task.Process.URIs = []v4.URI{{Value: "file://" + pkgFile}}
			task.Process.StartCmd = script + "touch app/bin/new || exit 7; exec app/bin/run.sh"
			return task.WorkBaseDir
		}},
	}
	d := newTestDriverWith(t, Config{HostVolumes: []string{filepath.Dir(pkgFile)}}) // the file:// package's
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			task := nobodyTask(t, "ns.nobody"+string(rune('a'+i))+".sleep", &v4.ProcessTask{ProcName: "sleep", User: "nobody", StartGracePeriod: 1})
			task.Files = []driver.File{{Path: "db.pass", Content: []byte("hunter2"), ReadOnly: true}}
			wd := tc.setup(task)
			if _, err := d.Start(t.Context(), task); err != nil {
				t.Fatalf("Start as nobody: %v; log: %s", err, readLog(task))
			}
			if got := readFile(t, filepath.Join(wd, "copy.txt")); got != "hunter2" {
				t.Errorf("the process read %q from its secret file", got)
			}
			wantOwned(t, wd, u.UID, workDirMode)
			wantOwned(t, filepath.Join(wd, "mine"), u.UID, 0)
			wantOwned(t, filepath.Join(wd, "db.pass"), u.UID, 0o400)
			log := filepath.Join(task.LogDir, "sleep.log")
			wantOwned(t, log, u.UID, 0o640)
			if !strings.Contains(readFile(t, log), "to my log") {
				t.Errorf("log: %q", readFile(t, log))
			}
			if task.Process.PidFile != "" {
				wantOwned(t, filepath.Dir(task.Process.PidFile), u.UID, workDirMode)
			}
			if len(task.Process.URIs) > 0 {
				wantOwned(t, filepath.Join(wd, "app", "bin"), u.UID, 0o755)
			}
		})
	}
}

func readLog(task *driver.Task) string {
	b, _ := os.ReadFile(filepath.Join(task.LogDir, task.Name+".log"))
	return string(b)
}

// A directory berth creates for a task (work dir, pid file's, outputDir) or one of the
// pod's becomes the task user's; a directory that exists keeps its owner and mode, so a
// pid file in a host volume does not hand the volume to the user, and a directory the
// task made in its pod (or a link to one) is not given away again.
func TestEnsureDirOwnership(t *testing.T) {
	u := nobody(t)
	t.Parallel()
	base := t.TempDir()
	run := filepath.Join(base, "pod", "run")
	host := filepath.Join(base, "host", "run")
	for _, dir := range []string{run, host} {
		if err := os.MkdirAll(dir, 0o711); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	sb := sandbox{pod: []string{filepath.Join(base, "pod", "work"), run}, host: []string{filepath.Join(base, "host")}}
	tests := []struct {
		name     string
		dir      string
		wantUID  uint32
		wantMode os.FileMode
	}{
		{"the pod's run dir: given to the user", run, u.UID, workDirMode},
		{"missing in the pod's run dir", filepath.Join(run, "pid"), u.UID, workDirMode},
		{"missing in a host volume: created for the user", filepath.Join(base, "host", "new", "pid"), u.UID, workDirMode},
		{"the host's: left alone", host, 0, 0o711},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl, err := sb.resolve("dir", tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			root, err := ensureDir(pl, u)
			if err != nil {
				t.Fatal(err)
			}
			root.Close()
			wantOwned(t, tc.dir, tc.wantUID, tc.wantMode)
		})
	}
}
