package containerd

import (
	"bytes"
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// berth exec -it: a shell on a terminal sees the size it was given and echoes what is
// typed; without a terminal, stdin's end reaches the command and stderr comes with
// stdout; exit codes come back.
func TestExecInteractive(t *testing.T) {
	d, _ := newDriver(t, nil)
	tk := task(t, "sh", "exec sleep 100000")
	start(t, d, tk)
	exec := func(t *testing.T, cmd []string, tty bool, stdin io.Reader) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var out bytes.Buffer
		code, err := d.ExecInteractive(ctx, tk.ID, cmd, tty, stdin, &out, nil)
		if err != nil {
			t.Fatalf("exec %q: %v (output %q)", cmd, err, out.String())
		}
		return code, out.String()
	}

	t.Run("a terminal, resized", func(t *testing.T) {
		stdin, typed := io.Pipe()
		resize := make(chan v4.TermSize)
		type result struct {
			code int
			err  error
			out  string
		}
		res := make(chan result, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out bytes.Buffer
			code, err := d.ExecInteractive(ctx, tk.ID, []string{"sh"}, true, stdin, &out, resize)
			res <- result{code, err, out.String()}
		}()
		// The channel is unbuffered and read by one loop that resizes before it reads
		// again: once the second size is taken, the first was applied.
		size := v4.TermSize{Rows: 37, Cols: 101}
		resize <- size
		resize <- size
		if _, err := io.WriteString(typed, "stty size; echo sum-$((40+2)); exit 3\n"); err != nil {
			t.Fatal(err)
		}
		r := <-res
		typed.Close()
		if r.err != nil || r.code != 3 || !strings.Contains(r.out, "37 101") || !strings.Contains(r.out, "sum-42") {
			t.Fatalf("exit code %d, %v, output %q: want 3, the size 37 101 and sum-42", r.code, r.err, r.out)
		}
		if !strings.Contains(r.out, "\r\n") {
			t.Errorf("output %q: no terminal's line ends", r.out)
		}
	})
	t.Run("a terminal keeps its output after stdin ended", func(t *testing.T) {
		// containerd's IO closes the stdin FIFO at stdin's end, and the shim then shuts
		// the terminal: the driver holds that end back until the command ended.
		code, out := exec(t, []string{"sh", "-c", "sleep 0.5; echo late"}, true, strings.NewReader(""))
		if code != 0 || !strings.Contains(out, "late") {
			t.Fatalf("exit code %d, output %q: want late", code, out)
		}
	})
	t.Run("stdin without a terminal", func(t *testing.T) {
		code, out := exec(t, []string{"cat"}, false, strings.NewReader("line one\nline two\n"))
		if code != 0 || out != "line one\nline two\n" {
			t.Fatalf("exit code %d, output %q", code, out)
		}
	})
	t.Run("stderr and the exit code", func(t *testing.T) {
		code, out := exec(t, []string{"sh", "-c", "echo out; echo err >&2; exit 5"}, false, strings.NewReader(""))
		if code != 5 || !strings.Contains(out, "out\n") || !strings.Contains(out, "err\n") {
			t.Fatalf("exit code %d, output %q", code, out)
		}
	})
	t.Run("a command that does not exist", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var out bytes.Buffer
		code, err := d.ExecInteractive(ctx, tk.ID, []string{"/no/such"}, false, nil, &out, nil)
		if err != nil || code != 127 || !strings.Contains(out.String(), "/no/such") {
			t.Fatalf("exec of a missing command: exit code %d, %v, output %q: want 127 and the runtime's message", code, err, out.String())
		}
	})
	t.Run("the deadline kills the command", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := d.ExecInteractive(ctx, tk.ID, []string{"sleep", "60"}, false, nil, io.Discard, nil)
		if err == nil || ctx.Err() == nil {
			t.Fatalf("exec past its deadline: %v", err)
		}
	})
	t.Run("an unknown task", func(t *testing.T) {
		if _, err := d.ExecInteractive(context.Background(), "ns.nope.x", []string{"true"}, false, nil, io.Discard, nil); err == nil {
			t.Fatal("exec in an unknown task: no error")
		}
	})
}

// PIDs are the host PIDs of the task's processes, its first one and those it started.
func TestPIDs(t *testing.T) {
	d, _ := newDriver(t, nil)
	tk := task(t, "pids", "sleep 100000 & exec sleep 100001")
	start(t, d, tk)
	var pids []int
	for range 100 { // the shell forks the first sleep as it starts
		var err error
		if pids, err = d.PIDs(context.Background(), tk.ID); err != nil {
			t.Fatal(err)
		}
		if len(pids) == 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	var cmds []string
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil {
			t.Fatalf("pid %d: %v", pid, err)
		}
		cmds = append(cmds, strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " "))
	}
	if len(cmds) != 2 || !strings.Contains(strings.Join(cmds, ","), "sleep 100000") || !strings.Contains(strings.Join(cmds, ","), "sleep 100001") {
		t.Fatalf("PIDs %v run %q: want the task's two sleeps", pids, cmds)
	}
	if _, err := d.PIDs(context.Background(), "ns.nope.x"); err == nil {
		t.Fatal("PIDs of an unknown task: no error")
	}
}
