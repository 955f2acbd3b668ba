package executor

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

func TestExecInteractive(t *testing.T) {
	h, d := newDockerHarness(t)
	h.run(bridgePod("web"))
	h.rec.waitPhase(t, "web", v4.StatusRunning)

	var out bytes.Buffer
	code, err := h.e.Exec(context.Background(), testNS, "web", ExecRequest{Task: "side", Cmd: []string{"cat", "-"}, Stdin: strings.NewReader("hello\n"), Stdout: &out})
	if err != nil || code != 0 || out.String() != "cat -\nhello\n" {
		t.Fatalf("exec = %d %v %q", code, err, out.String())
	}
	var gotID string
	var gotTTY bool
	d.SetInteractive(func(_ context.Context, id string, cmd []string, tty bool, _ io.Reader, _ io.Writer, _ <-chan v4.TermSize) (int, error) {
		gotID, gotTTY = id, tty
		return 7, nil
	})
	code, err = h.e.Exec(context.Background(), testNS, "web", ExecRequest{Cmd: []string{"sh"}, TTY: true, Stdout: &out})
	if err != nil || code != 7 || gotID != id("web", "web") || !gotTTY {
		t.Errorf("exec = %d %v on %q tty %v", code, err, gotID, gotTTY)
	}
	if _, err := h.e.Exec(context.Background(), testNS, "web", ExecRequest{Task: "nope", Cmd: []string{"sh"}, Stdout: &out}); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("unknown task: %v", err)
	}
	if _, err := h.e.Exec(context.Background(), testNS, "nope", ExecRequest{Cmd: []string{"sh"}, Stdout: &out}); !errors.Is(err, ErrUnknownPod) {
		t.Errorf("unknown pod: %v", err)
	}
}

func TestExecProcessFallsBackToShell(t *testing.T) {
	h := newHarness(t)
	h.run(processTG("p", v4.ProcessTask{ProcName: "svc", StartCmd: "./svc"}))
	h.rec.waitPhase(t, "p", v4.StatusRunning)
	var gotCmd string
	h.proc.SetExec(id("p", "svc"), func(_ context.Context, cmd string) (driver.ExecResult, error) {
		gotCmd = cmd
		return driver.ExecResult{ExitCode: 2, Output: []byte("out\n")}, nil
	})
	var out bytes.Buffer
	code, err := h.e.Exec(context.Background(), testNS, "p", ExecRequest{Cmd: []string{"echo", "it's", "a b", "$X"}, Stdout: &out})
	if err != nil || code != 2 || out.String() != "out\n" {
		t.Fatalf("exec = %d %v %q", code, err, out.String())
	}
	if want := `echo 'it'\''s' 'a b' '$X'`; gotCmd != want {
		t.Errorf("shell line = %s, want %s", gotCmd, want)
	}
	if _, err := h.e.Exec(context.Background(), testNS, "p", ExecRequest{Cmd: []string{"sh"}, TTY: true, Stdout: &out}); !errors.Is(err, ErrNoTerminal) {
		t.Errorf("tty on a process: %v", err)
	}
}
