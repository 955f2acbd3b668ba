package docker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/mount"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/drivertest"
)

func TestListAdopts(t *testing.T) {
	d := parallelDriver(t)
	a := newTask(t, d, "a", imgPlain, "/bin/sleep", "30")
	b := newTask(t, d, "b", imgPlain, "/bin/sh", "-c", "sleep 0.2; exit 5")
	mustStart(t, d, a)
	mustStart(t, d, b)
	drivertest.WaitEnded(t, d, b.ID, 10*time.Second)

	// A new driver with other state (an agent that restarted) finds both by their labels.
	d2 := newDriver(t)
	list, err := d2.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]driver.State{}
	for _, s := range list {
		found[s.ID] = s
	}
	sa, sb := found[a.ID], found[b.ID]
	if !sa.Running || sa.Labels[driver.LabelTask] != "a" || sa.Info.Pid == 0 {
		t.Errorf("running task: %+v", sa)
	}
	if sb.Running || sb.Info.ExitCode != 5 || sb.Labels[driver.LabelTask] != "b" || sb.Info.Status != "exited" {
		t.Errorf("ended task: %+v", sb)
	}
}

func TestStopGrace(t *testing.T) {
	d := parallelDriver(t)
	polite := newTask(t, d, "polite", imgPlain, "/bin/sh", "-c", `trap "exit 3" TERM; while :; do sleep 0.1; done`)
	stubborn := newTask(t, d, "stubborn", imgPlain, "/bin/sleep", "30") // pid 1 ignores SIGTERM
	mustStart(t, d, polite)
	mustStart(t, d, stubborn)
	ctx := ctxT(t, 30*time.Second)

	start := time.Now()
	if err := d.Stop(ctx, polite.ID, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("polite stop took %v", took)
	}
	if st, _ := d.Inspect(ctx, polite.ID); st.Running || st.Info.ExitCode != 3 {
		t.Errorf("polite: %+v", st.Info)
	}

	start = time.Now()
	if err := d.Stop(ctx, stubborn.ID, 500*time.Millisecond); err != nil { // at least 1 s
		t.Fatal(err)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("stubborn stop took %v, want the 1 s grace", took)
	}
	if st, _ := d.Inspect(ctx, stubborn.ID); st.Running || st.Info.ExitCode != 137 {
		t.Errorf("stubborn: %+v", st.Info)
	}
	if err := d.Stop(ctx, stubborn.ID, time.Second); err != nil {
		t.Errorf("stopping an ended task: %v", err)
	}
	if err := d.Stop(ctx, "test.no.such", time.Second); !isNotFound(err) {
		t.Errorf("stopping an unknown task: %v", err)
	}
	if err := d.Action(ctx, polite.ID, "reload"); err == nil {
		t.Error("action accepted")
	}
}

// A signal reaches the container's first process: USR1 trapped, then an exit asked for.
func TestSignal(t *testing.T) {
	d := parallelDriver(t)
	task := newTask(t, d, "signalled", imgPlain, "/bin/sh", "-c", `trap "exit 7" USR1; while :; do sleep 0.1; done`)
	mustStart(t, d, task)
	ctx := ctxT(t, 30*time.Second)
	// Sent until the container exits: the shell may not have set its trap yet, and pid 1
	// ignores a signal it has no handler for.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if err := d.Signal(ctx, task.ID, syscall.SIGUSR1); err != nil && !strings.Contains(err.Error(), "is not running") {
			t.Fatal(err)
		}
		st, err := d.Inspect(ctx, task.ID)
		if err == nil && !st.Running {
			if st.Info.ExitCode != 7 {
				t.Fatalf("exit code %d, want the trap's 7", st.Info.ExitCode)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the container did not exit on SIGUSR1: %+v %v", st.Info, err)
		}
	}
	if err := d.Signal(ctx, task.ID, syscall.SIGUSR1); err == nil {
		t.Error("a signal to an ended container was accepted")
	}
	if err := d.Signal(ctx, "test.no.such", syscall.SIGUSR1); !isNotFound(err) {
		t.Errorf("a signal to an unknown task: %v", err)
	}
}

func TestExec(t *testing.T) {
	d := parallelDriver(t)
	task := newTask(t, d, "exec", imgPlain, "/bin/sleep", "30")
	task.Env = []string{"FOO=bar"}
	mustStart(t, d, task)

	r, err := d.Exec(ctxT(t, 10*time.Second), task.ID, "echo out-$FOO; echo err >&2; exit 7")
	if err != nil || r.ExitCode != 7 || !strings.Contains(string(r.Output), "out-bar\n") || !strings.Contains(string(r.Output), "err\n") {
		t.Fatalf("exec: %q %d %v", r.Output, r.ExitCode, err)
	}
	r, err = d.Exec(ctxT(t, 10*time.Second), task.ID, "busybox head -c 200000 /dev/zero")
	if err != nil || r.ExitCode != 0 || len(r.Output) != execOutputCap {
		t.Fatalf("big output: %d bytes, %v", len(r.Output), err)
	}
	start := time.Now()
	_, err = d.Exec(ctxT(t, 300*time.Millisecond), task.ID, "sleep 20")
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
		t.Fatalf("deadline: %v after %v", err, time.Since(start))
	}
	if _, err := d.Exec(ctxT(t, 10*time.Second), "test.no.such", "true"); !isNotFound(err) {
		t.Fatalf("unknown task: %v", err)
	}
}

func TestExecInteractive(t *testing.T) {
	d := parallelDriver(t)
	task := newTask(t, d, "it", imgPlain, "/bin/sleep", "30")
	mustStart(t, d, task)

	var out bytes.Buffer
	code, err := d.ExecInteractive(ctxT(t, 10*time.Second), task.ID, []string{"cat"}, false, strings.NewReader("hello\n"), &out, nil)
	if err != nil || code != 0 || out.String() != "hello\n" {
		t.Fatalf("cat: %q %d %v", out.String(), code, err)
	}

	out.Reset()
	resize := make(chan v4.TermSize, 1)
	resize <- v4.TermSize{Rows: 40, Cols: 100}
	code, err = d.ExecInteractive(ctxT(t, 10*time.Second), task.ID, []string{"sh", "-c", "read x; echo got-$x; exit 4"}, true,
		strings.NewReader("abc\n"), &out, resize)
	if err != nil || code != 4 || !strings.Contains(out.String(), "got-abc") {
		t.Fatalf("tty: %q %d %v", out.String(), code, err)
	}
}

func TestLogs(t *testing.T) {
	d := parallelDriver(t)
	task := newTask(t, d, "logs", imgPlain, "/bin/sh", "-c", "echo err >&2; sleep 0.2; for i in 1 2 3 4 5; do echo line$i; done; sleep 1; echo late; exec sleep 30")
	mustStart(t, d, task)
	waitLog(t, d, task.ID, "line5")

	rc, err := d.Logs(ctxT(t, 10*time.Second), task.ID, driver.LogOptions{Tail: 2})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(b) != "line4\nline5\n" {
		t.Fatalf("tail 2: %q %v", b, err)
	}
	got := waitLog(t, d, task.ID, "late")
	if !strings.HasPrefix(got, "err\nline1\n") {
		t.Fatalf("follow: %q", got)
	}
	// One stream alone, with times.
	for _, c := range []struct{ stream, want string }{{"stderr", "err\n"}, {"stdout", "line1\n"}} {
		rc, err := d.Logs(ctxT(t, 10*time.Second), task.ID, driver.LogOptions{Stream: c.stream, Timestamps: true})
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		at, text, _ := strings.Cut(string(b), " ")
		if _, perr := time.Parse(time.RFC3339Nano, at); err != nil || perr != nil || !strings.HasPrefix(text, c.want) ||
			(c.stream == "stdout" && strings.Contains(text, "err")) || (c.stream == "stderr" && text != c.want) {
			t.Fatalf("%s with times: %q %v", c.stream, b, err)
		}
	}
	// Closing a followed stream ends it.
	rc, err = d.Logs(context.Background(), task.ID, driver.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if _, err := d.Logs(context.Background(), "test.no.such", driver.LogOptions{}); !isNotFound(err) {
		t.Fatalf("unknown task: %v", err)
	}
}

func TestFilesAndVolumes(t *testing.T) {
	d := parallelDriver(t)
	vol := t.TempDir()
	os.WriteFile(filepath.Join(vol, "data.txt"), []byte("from-host\n"), 0o644)
	task := newTask(t, d, "files", imgPlain, "/bin/sleep", "30")
	task.Container.WorkingDir = "/work"
	task.Files = []driver.File{
		{Path: "/etc/berth/conf.txt", Content: []byte("secret\n"), ReadOnly: true},
		{Path: "rel.txt", Content: []byte("rel\n")},
	}
	task.Setup.Volumes = []driver.Mount{{HostPath: vol, ContainerPath: "/data", ReadOnly: true}, {HostPath: filepath.Join(vol, "new"), ContainerPath: "/scratch"}}
	mustStart(t, d, task)

	r, err := d.Exec(ctxT(t, 10*time.Second), task.ID, "cat /etc/berth/conf.txt /work/rel.txt /data/data.txt && echo w > /work/rel.txt && echo s > /scratch/s && cat /work/rel.txt")
	if err != nil || r.ExitCode != 0 || string(r.Output) != "secret\nrel\nfrom-host\nw\n" {
		t.Fatalf("files: %q %d %v", r.Output, r.ExitCode, err)
	}
	for _, p := range []string{"/etc/berth/conf.txt", "/data/data.txt"} {
		r, err = d.Exec(ctxT(t, 10*time.Second), task.ID, "echo x > "+p)
		if err != nil || r.ExitCode == 0 || !strings.Contains(string(r.Output), "Read-only") {
			t.Errorf("%s writable: %q %d %v", p, r.Output, r.ExitCode, err)
		}
	}
	if _, err := os.Stat(filepath.Join(vol, "new", "s")); err != nil {
		t.Errorf("created volume: %v", err)
	}
	// The container runs as root: the files are root's alone.
	files := d.fileSources(task.ID, mustInspectMounts(t, task.ID))
	if len(files) != 2 {
		t.Fatalf("file mounts %v", files)
	}
	for _, f := range files {
		want := os.FileMode(0o600)
		if strings.HasSuffix(f, "conf.txt") {
			want = 0o400
		}
		wantFileOwner(t, f, 0, 0, want)
	}
	if err := d.Remove(context.Background(), task.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.taskFilesDir(task.ID)); !os.IsNotExist(err) {
		t.Errorf("files left after Remove: %v", err)
	}
}

// A secret or configmap file belongs to the user the container runs as: the image's USER
// (resolved in the image's /etc/passwd), or the user parameter, by name or by number.
func TestFilesBelongToTheContainerUser(t *testing.T) {
	d := parallelDriver(t)
	for _, c := range []struct {
		name, user string
		uid, gid   int
	}{
		{"image-user", "", 4321, 4322},
		{"by-name", "app:other", 4321, 5000},
		{"by-number", "2345:2346", 2345, 2346},
		{"number-in-passwd", "4321", 4321, 4322},
	} {
		t.Run(c.name, func(t *testing.T) {
			task := newTask(t, d, "owner-"+c.name, imgUser, "/bin/sleep", "30")
			if c.user != "" {
				task.Container.Parameters = []v4.Parameter{{Key: "user", Value: c.user}}
			}
			task.Files = []driver.File{{Path: "/tmp/secret.txt", Content: []byte("pw\n")}}
			mustStart(t, d, task)
			r, err := d.Exec(ctxT(t, 10*time.Second), task.ID, "cat /tmp/secret.txt")
			if err != nil || r.ExitCode != 0 || string(r.Output) != "pw\n" {
				t.Fatalf("the container's user cannot read its file: %q %d %v", r.Output, r.ExitCode, err)
			}
			wantFileOwner(t, filepath.Join(d.taskFilesDir(task.ID), "tmp", "secret.txt"), c.uid, c.gid, 0o600)
		})
	}
}

func mustInspectMounts(t *testing.T, id string) []mount.Mount {
	t.Helper()
	ci, err := rawContainer(context.Background(), containerName(id))
	if err != nil {
		t.Fatal(err)
	}
	return ci.HostConfig.Mounts
}

func wantFileOwner(t *testing.T, path string, uid, gid int, mode os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) != uid || int(st.Gid) != gid || fi.Mode().Perm() != mode {
		t.Errorf("%s: %d:%d %v, want %d:%d %v", path, st.Uid, st.Gid, fi.Mode().Perm(), uid, gid, mode)
	}
}
