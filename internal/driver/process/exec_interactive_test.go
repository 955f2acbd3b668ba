package process

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// startUserTask starts a sleeping task as the test user, with GREETING in its env.
func startUserTask(t *testing.T, d *Driver, id string) (*driver.Task, *credential) {
	t.Helper()
	u := testUser(t)
	task := testTask(t, id, &v4.ProcessTask{ProcName: "sleep", User: u.Name, StartGracePeriod: 1, StartCmd: "exec sleep 60"})
	// t.TempDir is private to root; the user must reach its work dir.
	for dir := task.WorkBaseDir; dir != "/" && dir != os.TempDir(); dir = filepath.Dir(dir) {
		os.Chmod(dir, 0o755)
	}
	task.Env = []string{"GREETING=hi"}
	mustStart(t, d, task)
	return task, u
}

// Without a terminal the command gets stdin, and its output and exit code come back; it
// runs as the task's user, in its work dir, environment and cgroup.
func TestExecInteractiveStreams(t *testing.T) {
	requireCgroups(t)
	d := parallelTestDriver(t)
	task, u := startUserTask(t, d, "ns.execi.sleep")
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		cmd   []string
		stdin string
		code  int
		want  []string
	}{
		{"stdin and env", []string{"sh", "-c", `read x; echo "got $x, $GREETING"; pwd; id -u`}, "hello\n", 0,
			[]string{"got hello, hi\n", task.WorkBaseDir + "\n", strconv.Itoa(int(u.UID)) + "\n"}},
		{"exit code and stderr", []string{"sh", "-c", "echo oops >&2; exit 3"}, "", 3, []string{"oops\n"}},
		{"arguments as given", []string{"printf", "%s|", "a b", "$HOME", "'q'"}, "", 0, []string{"a b|$HOME|'q'|"}},
		{"the task's cgroup", []string{"cat", "/proc/self/cgroup"}, "", 0, []string{testCgroupParent + "/" + task.ID}},
	} {
		var out strings.Builder
		code, err := d.ExecInteractive(ctx, task.ID, tc.cmd, false, strings.NewReader(tc.stdin), &out, nil)
		if err != nil || code != tc.code {
			t.Errorf("%s: exit %d (%v), want %d; output %q", tc.name, code, err, tc.code, out.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: output %q lacks %q", tc.name, out.String(), w)
			}
		}
	}
	if _, err := d.ExecInteractive(ctx, "ns.execi.none", []string{"true"}, false, nil, io.Discard, nil); err == nil {
		t.Error("exec in an unknown task: no error")
	}
	if _, err := d.ExecInteractive(ctx, task.ID, nil, false, nil, io.Discard, nil); err == nil {
		t.Error("exec of no command: no error")
	}
}

// With a terminal the command runs on a pseudo-terminal that is the task user's, sized as
// asked; what it shows comes back; the command's end ends the call.
func TestExecInteractiveTerminal(t *testing.T) {
	requireCgroups(t)
	d := parallelTestDriver(t)
	task, u := startUserTask(t, d, "ns.exectty.sleep")
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	resize := make(chan v4.TermSize)
	var out syncBuffer
	done := make(chan error, 1)
	var code int
	go func() {
		var err error
		code, err = d.ExecInteractive(context.Background(), task.ID,
			[]string{"sh", "-c", `read x; stty size; id -u; stat -c %u "$(tty)"; echo "TERM=$TERM"; exit 5`}, true, stdinR, &out, resize)
		done <- err
	}()
	// The second send returns only once the first size is set.
	resize <- v4.TermSize{Rows: 41, Cols: 101}
	resize <- v4.TermSize{Rows: 41, Cols: 101}
	if _, err := io.WriteString(stdinW, "go\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil || code != 5 {
			t.Fatalf("exit %d (%v), output %q", code, err, out.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the terminal's command did not end: output %q", out.String())
	}
	uid := strconv.Itoa(int(u.UID))
	for _, w := range []string{"41 101", "\n" + uid + "\r\n" + uid + "\r\n", "TERM=xterm"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("terminal output %q lacks %q", out.String(), w)
		}
	}
}

// A command that leaves a process holding the terminal still ends the call.
func TestExecInteractiveTerminalOrphan(t *testing.T) {
	requireCgroups(t)
	d := parallelTestDriver(t)
	task := testTask(t, "ns.exectty2.sleep", &v4.ProcessTask{ProcName: "sleep", StartCmd: "exec sleep 60"})
	mustStart(t, d, task)
	done := make(chan error, 1)
	go func() {
		_, err := d.ExecInteractive(context.Background(), task.ID, []string{"sh", "-c", "sleep 30 & echo started"}, true, nil, io.Discard, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("a background process holding the terminal kept the call open")
	}
}

// syncBuffer is a strings.Builder safe for a writer and a reader in other goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
