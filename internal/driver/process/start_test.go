package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/drivertest"
)

// daemonScript starts sleep in the background, writes its pid and exits, like the
// start.sh of a BCS process package.
const daemonScript = `sleep 60 >/dev/null 2>&1 &
echo $! > "$1"
`

func TestStartPidFileDaemon(t *testing.T) {
	d := parallelTestDriver(t)
	task := testTask(t, "ns.daemon.sleep", &v4.ProcessTask{ProcName: "sleep", StartGracePeriod: 1})
	writeScript(t, filepath.Join(task.WorkBaseDir, "start.sh"), daemonScript)
	task.Process.PidFile = filepath.Join(task.RunBaseDir, "pid", "app.pid")
	task.Process.StartCmd = "./start.sh " + task.Process.PidFile

	st := mustStart(t, d, task)
	rec, _ := d.load(task.ID)
	if st.Info.Pid == rec.ChildPid {
		t.Fatalf("task pid %d is the start shell, not the daemon", st.Info.Pid)
	}
	want := readPid(t, task.Process.PidFile)
	if st.Info.Pid != want {
		t.Fatalf("pid %d, pid file says %d", st.Info.Pid, want)
	}
	if comm, _ := procNameOf(st.Info.Pid); comm != "sleep" {
		t.Fatalf("task process is %q", comm)
	}
	// The daemon was forked by the held shell, so it is in the task's cgroup.
	if !d.ownsPid(rec, st.Info.Pid) {
		t.Fatal("daemon is not in the task's cgroup")
	}
	// The start shell exited 0 long ago; the task still runs.
	time.Sleep(200 * time.Millisecond)
	if got, _ := d.Inspect(context.Background(), task.ID); !got.Running || got.Info.Status != "running" {
		t.Fatalf("Inspect: %+v", got.Info)
	}
	if err := d.Stop(context.Background(), task.ID, time.Second); err != nil {
		t.Fatal(err)
	}
	if alive(st.Info.Pid, 0) {
		t.Fatal("daemon survived Stop")
	}
}

func TestStartFailures(t *testing.T) {
	requireCgroups(t)
	cases := []struct {
		name    string
		setup   func(t *testing.T, task *driver.Task)
		wantErr []string
	}{
		{"procName mismatch", func(t *testing.T, task *driver.Task) {
			task.Process.ProcName = "gamesvr"
			task.Process.StartCmd = "exec sleep 30"
		}, []string{`is "sleep", not "gamesvr"`, "set procName to sleep"}},
		{"the shell stays for a list", func(t *testing.T, task *driver.Task) {
			task.Process.StartCmd = "sleep 0.1; sleep 30"
		}, []string{`not "sleep"`, "the task's process is the shell running startCmd", "exec sleep"}},
		{"pid file never written", func(t *testing.T, task *driver.Task) {
			task.Process.PidFile = filepath.Join(task.RunBaseDir, "pid", "never.pid")
			task.Process.StartCmd = "sleep 30 &"
		}, []string{"never.pid"}},
		{"pid file process mismatch", func(t *testing.T, task *driver.Task) {
			task.Process.ProcName = "gamesvr"
			task.Process.PidFile = filepath.Join(task.RunBaseDir, "app.pid")
			writeScript(t, filepath.Join(task.WorkBaseDir, "start.sh"), daemonScript)
			task.Process.StartCmd = "./start.sh " + task.Process.PidFile
		}, []string{`is "sleep", not "gamesvr"`}},
		{"command not found", func(t *testing.T, task *driver.Task) {
			task.Process.StartCmd = "./no-such-gamesvr --port 1"
		}, []string{"127", "not found", "no-such-gamesvr"}},
		{"exits during grace", func(t *testing.T, task *driver.Task) {
			task.Process.StartCmd = "echo broken config >&2; exit 3"
		}, []string{"exited with code 3", "broken config"}},
		{"with a pid file, fails at the end of grace", func(t *testing.T, task *driver.Task) {
			// It ends as the grace period does: whether the grace wait or the pid file
			// check sees it first, the start fails with its exit, not a missing pid file.
			task.Process.PidFile = filepath.Join(task.RunBaseDir, "late.pid")
			task.Process.StartCmd = "sleep 0.98; echo no licence >&2; exit 4"
		}, []string{"exited with code 4", "no licence"}},
		{"unknown user", func(t *testing.T, task *driver.Task) {
			task.Process.User = "no-such-user-x"
		}, []string{`user "no-such-user-x" does not exist`}},
		{"unknown file owner", func(t *testing.T, task *driver.Task) {
			task.Files = []driver.File{{Path: filepath.Join(task.WorkBaseDir, "a.conf"), User: "no-such-owner"}}
		}, []string{`user "no-such-owner" does not exist`}},
	}
	d := newTestDriver(t, "")
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id := fmt.Sprintf("ns.fail.t%d", i)
			task := testTask(t, id, &v4.ProcessTask{ProcName: "sleep", StartCmd: "exec sleep 30", StartGracePeriod: 1})
			tc.setup(t, task)
			st, err := d.Start(context.Background(), task)
			if err == nil {
				t.Fatalf("Start succeeded: %+v", st)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if st.Running {
				t.Errorf("failed start reports running: %+v", st)
			}
			// Nothing is left: no state, no cgroup, no process.
			if _, err := d.Inspect(context.Background(), id); !errors.Is(err, driver.ErrNotFound) {
				t.Errorf("Inspect after failed start: %v", err)
			}
			if _, err := os.Stat(filepath.Join(detectCgroupRoot(t), testCgroupParent, id)); err == nil {
				t.Errorf("cgroup of failed task left behind")
			}
			if st.Info.Pid > 0 && alive(st.Info.Pid, 0) {
				t.Errorf("process %d of failed task still runs", st.Info.Pid)
			}
		})
	}
}

// detectCgroupRoot is the memory hierarchy (v1) or the unified one (v2).
func detectCgroupRoot(t *testing.T) string {
	if detectCgroups() == cgroupV1 {
		return "/sys/fs/cgroup/memory"
	}
	return unifiedMount
}

func TestStartEnvWorkDirAndFiles(t *testing.T) {
	d := parallelTestDriver(t)
	task := testTask(t, "ns.env.sleep", &v4.ProcessTask{
		ProcName:         "sleep",
		StartCmd:         `pwd > pwd.txt; env > env.txt; id -u > uid.txt; exec sleep 30`,
		StartGracePeriod: 1,
	})
	task.Process.WorkPath = filepath.Join(task.WorkBaseDir, "ns.app.0", "gamesvc") // created by Start
	task.Env = []string{"PORT_http=31001", "GREETING=hello world"}
	task.Files = []driver.File{
		{Path: filepath.Join(task.WorkBaseDir, "conf", "app.conf"), Content: []byte("a=1\n"), ReadOnly: true},
		{Path: "rel/secret.txt", Content: []byte("s3cret")},
	}
	mustStart(t, d, task)
	wd := task.Process.WorkPath
	if got := strings.TrimSpace(readFile(t, filepath.Join(wd, "pwd.txt"))); got != wd {
		t.Errorf("work dir %q, want %q", got, wd)
	}
	env := readFile(t, filepath.Join(wd, "env.txt"))
	for _, want := range []string{"PORT_http=31001\n", "GREETING=hello world\n", "PATH=", "HOME="} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %q:\n%s", want, env)
		}
	}
	if got := strings.TrimSpace(readFile(t, filepath.Join(wd, "uid.txt"))); got != "0" {
		t.Errorf("uid %s, want 0 (no user)", got)
	}
	// Configmap and secret files are their owner's only (docs/process.md).
	for path, want := range map[string]os.FileMode{
		filepath.Join(task.WorkBaseDir, "conf", "app.conf"): 0o400,
		filepath.Join(wd, "rel", "secret.txt"):              0o600,
	} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", path, fi, err, want)
		}
	}
	if got := readFile(t, filepath.Join(wd, "rel", "secret.txt")); got != "s3cret" {
		t.Errorf("relative file: %q", got)
	}
}

// A task runs as its spec's user, else as the driver's default user; its files, its
// work and its execs are that user's.
func TestStartAsUser(t *testing.T) {
	requireCgroups(t)
	u := testUser(t)
	for i, c := range []struct{ name, specUser, defaultUser string }{
		{"spec", u.Name, ""},
		{"default", "", u.Name},
		{"spec over default", u.Name, "nobody"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := newTestDriverWith(t, Config{DefaultUser: c.defaultUser})
			task := testTask(t, fmt.Sprintf("ns.user%d.sleep", i), &v4.ProcessTask{
				ProcName: "sleep", User: c.specUser, StartGracePeriod: 1,
				StartCmd: `id -u > ids.txt; id -g >> ids.txt; touch mine; exec sleep 30`,
			})
			// t.TempDir is private to root; the user must reach its work dir.
			for dir := task.WorkBaseDir; dir != "/" && dir != os.TempDir(); dir = filepath.Dir(dir) {
				os.Chmod(dir, 0o755)
			}
			task.Files = []driver.File{{Path: filepath.Join(task.WorkBaseDir, "owned.conf"), Content: []byte("x")}}
			mustStart(t, d, task)
			ids := strings.Fields(readFile(t, filepath.Join(task.WorkBaseDir, "ids.txt")))
			if len(ids) != 2 || ids[0] != strconv.Itoa(int(u.UID)) || ids[1] != strconv.Itoa(int(u.GID)) {
				t.Fatalf("ran as uid/gid %v, want %d/%d", ids, u.UID, u.GID)
			}
			for _, f := range []string{"mine", "owned.conf"} {
				if uid := fileUID(t, filepath.Join(task.WorkBaseDir, f)); uid != u.UID {
					t.Errorf("%s owned by %d, want %d", f, uid, u.UID)
				}
			}
			// Exec runs as the task's user too.
			res, err := d.Exec(context.Background(), task.ID, "id -u")
			if err != nil || strings.TrimSpace(string(res.Output)) != strconv.Itoa(int(u.UID)) {
				t.Fatalf("Exec id -u: %q %v", res.Output, err)
			}
		})
	}
}

func TestExitCodeAndFinishAt(t *testing.T) {
	d := parallelTestDriver(t)
	task := testTask(t, "ns.exit.sh", &v4.ProcessTask{ProcName: "sh", StartCmd: "sleep 1.3; exit 3", StartGracePeriod: 1})
	st := mustStart(t, d, task)
	end := drivertest.WaitEnded(t, d, task.ID, 5*time.Second)
	info := end.Info
	if info.Status != "exited" || info.ExitCode != 3 || info.OOMKilled {
		t.Fatalf("ended with %+v", info)
	}
	if info.FinishAt.IsZero() || !info.FinishAt.After(st.Info.StartAt) || info.Pid != st.Info.Pid {
		t.Fatalf("FinishAt %v, StartAt %v, pid %d/%d", info.FinishAt, st.Info.StartAt, info.Pid, st.Info.Pid)
	}
	if list, _ := d.List(context.Background()); len(list) != 1 || list[0].Running || list[0].Info.ExitCode != 3 {
		t.Fatalf("List: %+v", list)
	}
	if err := d.Stop(context.Background(), task.ID, time.Second); err != nil {
		t.Fatalf("Stop of an ended task: %v", err)
	}
	if err := d.Remove(context.Background(), task.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Inspect(context.Background(), task.ID); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("Inspect after Remove: %v", err)
	}
	if _, err := os.Stat(filepath.Join(task.LogDir, "sh.log")); err != nil {
		t.Fatalf("log removed with the task: %v", err)
	}
}

func TestStartTwiceAndRemoveRunning(t *testing.T) {
	d := parallelTestDriver(t)
	task := testTask(t, "ns.twice.sleep", &v4.ProcessTask{ProcName: "sleep", StartCmd: "exec sleep 30"})
	mustStart(t, d, task)
	if _, err := d.Start(context.Background(), task); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second Start: %v", err)
	}
	if err := d.Remove(context.Background(), task.ID); err == nil {
		t.Fatal("Remove of a running task succeeded")
	}
	if _, err := d.Inspect(context.Background(), "ns.nope"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("Inspect unknown: %v", err)
	}
	if err := d.Stop(context.Background(), "ns.nope", 0); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("Stop unknown: %v", err)
	}
}

func TestStartWithPackage(t *testing.T) {
	requireCgroups(t)
	t.Parallel()
	pkg := buildTarGz(t, []archiveEntry{
		{Name: "gamesvc/start.sh", Body: "#!/bin/sh\n" + daemonScript, Mode: 0o755},
	})
	srv := newPkgServer(t, map[string][]byte{"/prod/gamesvc-v1.tar.gz": pkg})
	d := newTestDriver(t, "")
	task := testTask(t, "ns.pkg.sleep", &v4.ProcessTask{ProcName: "sleep", StartGracePeriod: 1})
	out := filepath.Join(task.WorkBaseDir, "ns.gamesvc.0")
	task.Process.WorkPath = filepath.Join(out, "gamesvc")
	task.Process.PidFile = filepath.Join(task.RunBaseDir, "ns.gamesvc.0", "pid", "gamesvc.pid")
	task.Process.StartCmd = "./start.sh " + task.Process.PidFile
	task.Process.URIs = []v4.URI{{Value: srv.URL + "/prod/gamesvc-v1.tar.gz", User: "repo", Pwd: "s3cret", OutputDir: out}}
	mustStart(t, d, task)

	bad := testTask(t, "ns.pkg2.sleep", &v4.ProcessTask{ProcName: "sleep", StartCmd: "exec sleep 30"})
	bad.Process.URIs = []v4.URI{{Value: srv.URL + "/prod/gamesvc-v1.tar.gz", User: "repo", Pwd: "guess"}}
	if _, err := d.Start(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "401 Unauthorized") {
		t.Fatalf("Start with a bad password: %v", err)
	}
}

func TestNoCgroups(t *testing.T) {
	d := newTestDriver(t, "")
	d.cgroups = cgroupNone // as for an agent that is not root
	if cg, err := d.createCgroup("ns.nocg.a", cgroupResources{shares: 1024}); cg != nil || err != nil {
		t.Fatalf("without limits: %v %v, want to run without a cgroup", cg, err)
	}
	// A limit, or the revocable tier's lowest weight, is not given up for want of cgroups.
	for _, r := range []cgroupResources{{cpu: 1}, {memMB: 128}, {shares: 2, revocable: true}} {
		_, err := d.createCgroup("ns.nocg.b", r)
		if err == nil || !strings.Contains(err.Error(), "cgroups are unavailable") {
			t.Fatalf("%+v without cgroups: %v", r, err)
		}
	}
	if os.Geteuid() != 0 {
		return // starting needs nothing more than a shell; the rest is covered above
	}
	task := testTask(t, "ns.nocg.sleep", &v4.ProcessTask{ProcName: "sleep", StartCmd: "exec sleep 30"})
	st := mustStart(t, d, task)
	if err := d.Stop(context.Background(), task.ID, time.Second); err != nil {
		t.Fatal(err)
	}
	if alive(st.Info.Pid, 0) {
		t.Fatal("process without a cgroup survived Stop")
	}
	task.CPULimit = 1
	task.ID = "ns.nocg.limited"
	if _, err := d.Start(context.Background(), task); err == nil || !strings.Contains(err.Error(), "cgroups are unavailable") {
		t.Fatalf("Start with limits and no cgroups: %v", err)
	}
}
