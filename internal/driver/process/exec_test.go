package process

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/drivertest"
)

func TestExec(t *testing.T) {
	d := parallelTestDriver(t)
	task := testTask(t, "ns.exec.sleep", &v4.ProcessTask{ProcName: "sleep", StartCmd: "exec sleep 60"})
	task.Env = []string{"GREETING=hi"}
	mustStart(t, d, task)
	ctx := context.Background()
	cases := []struct {
		cmd      string
		code     int
		output   string
		checkLen int
	}{
		{cmd: `echo "$GREETING from $(pwd)"; echo oops >&2; exit 4`, code: 4, output: "hi from " + task.WorkBaseDir + "\noops\n"},
		{cmd: `exit 0`, code: 0, output: ""},
		{cmd: `head -c 200000 /dev/zero`, code: 0, checkLen: execOutputMax},
	}
	for _, tc := range cases {
		res, err := d.Exec(ctx, task.ID, tc.cmd)
		if err != nil {
			t.Fatalf("%s: %v", tc.cmd, err)
		}
		if res.ExitCode != tc.code {
			t.Errorf("%s: exit %d, want %d", tc.cmd, res.ExitCode, tc.code)
		}
		if tc.checkLen > 0 {
			if len(res.Output) != tc.checkLen {
				t.Errorf("%s: %d bytes of output, want %d", tc.cmd, len(res.Output), tc.checkLen)
			}
		} else if string(res.Output) != tc.output {
			t.Errorf("%s: output %q, want %q", tc.cmd, res.Output, tc.output)
		}
	}
	// Exec runs in the task's cgroup.
	res, err := d.Exec(ctx, task.ID, "cat /proc/self/cgroup")
	if err != nil || !strings.Contains(string(res.Output), testCgroupParent+"/"+task.ID) {
		t.Errorf("exec outside the task's cgroup: %s %v", res.Output, err)
	}
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	begin := time.Now()
	if _, err := d.Exec(tctx, task.ID, "sleep 30"); err == nil {
		t.Error("Exec past its deadline returned no error")
	}
	if took := time.Since(begin); took > 3*time.Second {
		t.Errorf("Exec past its deadline took %s", took)
	}
}

func TestLogs(t *testing.T) {
	d := parallelTestDriver(t)
	task := testTask(t, "ns.logs.sh", &v4.ProcessTask{
		ProcName:         "sh",
		StartCmd:         `i=0; while :; do i=$((i+1)); echo "line $i"; sleep 0.05; done`,
		StartGracePeriod: 1,
	})
	mustStart(t, d, task)
	ctx := context.Background()

	rc, err := d.Logs(ctx, task.ID, driver.LogOptions{Tail: 2})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "line ") {
		t.Fatalf("tail 2: %q", b)
	}

	fctx, cancel := context.WithCancel(ctx)
	rc, err = d.Logs(fctx, task.ID, driver.LogOptions{Follow: true, Tail: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	var got []string
	for len(got) < 5 && sc.Scan() {
		got = append(got, sc.Text())
	}
	if len(got) < 5 {
		t.Fatalf("follow read %q", got)
	}
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, rc)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("follow after cancel: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("follow did not end with its context")
	}
}

func TestTailOffset(t *testing.T) {
	cases := []struct {
		content string
		n       int
		want    string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 2, "b\nc"},
		{"a\nb\nc\n", 5, "a\nb\nc\n"},
		{"", 3, ""},
		{strings.Repeat("x", 20000) + "\nlast\n", 1, "last\n"},
	}
	for _, tc := range cases {
		p := filepath.Join(t.TempDir(), "log")
		os.WriteFile(p, []byte(tc.content), 0o644)
		f, _ := os.Open(p)
		off, err := tailOffset(f, tc.n)
		f.Close()
		if err != nil || tc.content[off:] != tc.want {
			t.Errorf("tail %d of %.20q: %q %v, want %q", tc.n, tc.content, tc.content[off:], err, tc.want)
		}
	}
}

func TestActions(t *testing.T) {
	d := parallelTestDriver(t)
	task := testTask(t, "ns.action.sleep", &v4.ProcessTask{ProcName: "sleep", StartGracePeriod: 1})
	writeScript(t, filepath.Join(task.WorkBaseDir, "start.sh"), daemonScript)
	pidFile := filepath.Join(task.RunBaseDir, "app.pid")
	task.Process.PidFile = pidFile
	task.Process.StartCmd = "./start.sh " + pidFile
	task.Process.ReloadCmd = "echo reloaded >> reload.txt"
	task.Process.RestartCmd = `kill $(cat ` + pidFile + `); ./start.sh ` + pidFile
	first := mustStart(t, d, task)
	ctx := context.Background()

	if err := d.Action(ctx, task.ID, "reload"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(task.WorkBaseDir, "reload.txt")); got != "reloaded\n" {
		t.Fatalf("reload.txt %q", got)
	}
	if err := d.Action(ctx, task.ID, "restart"); err != nil {
		t.Fatal(err)
	}
	st, err := d.Inspect(ctx, task.ID)
	if err != nil || !st.Running || st.Info.Pid == first.Info.Pid {
		t.Fatalf("after restart: %+v %v (old pid %d)", st.Info, err, first.Info.Pid)
	}
	if want := readPid(t, pidFile); st.Info.Pid != want {
		t.Fatalf("pid %d, pid file says %d", st.Info.Pid, want)
	}
	rec, _ := d.load(task.ID)
	if !d.ownsPid(rec, st.Info.Pid) {
		t.Fatal("restarted process is outside the task's cgroup")
	}

	plain := testTask(t, "ns.action2.sleep", &v4.ProcessTask{ProcName: "sleep", StartCmd: "exec sleep 60"})
	mustStart(t, d, plain)
	for _, a := range []string{"reload", "restart"} {
		if err := d.Action(ctx, plain.ID, a); err == nil || !strings.Contains(err.Error(), "process has no "+a+"Cmd") {
			t.Errorf("%s without a command: %v", a, err)
		}
	}
	if err := d.Action(ctx, plain.ID, "dance"); err == nil {
		t.Error("unknown action accepted")
	}

	// A signal reaches the process itself: TERM ends sleep; then there is nothing to signal.
	if err := d.Signal(ctx, plain.ID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	drivertest.WaitEnded(t, d, plain.ID, 10*time.Second)
	if err := d.Signal(ctx, plain.ID, syscall.SIGTERM); err == nil || !strings.Contains(err.Error(), "has exited") {
		t.Errorf("signal to an ended task: %v", err)
	}
}
