package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// holdScript makes the shell wait on fd 3 until the driver has moved it into the task's
// cgroup, and only then run the command: nothing the command forks can escape the cgroup
// (limits and kill cover every descendant). It works for any user and both cgroup
// versions, unlike having the shell write its own pid into root-owned cgroup files.
// $1 is the command, run by a fresh /bin/sh -c like any startCmd.
const holdScript = `read -r berth_go <&3 || exit 125; exec 3<&-; unset berth_go; exec /bin/sh -c "$1"`

// holdExec is holdScript for a program and its arguments, run as given ($@).
const holdExec = `read -r berth_go <&3 || exit 125; exec 3<&-; unset berth_go; exec "$@"`

// shellSpec is a command to run in a task's context.
type shellSpec struct {
	Cmd string
	// Args, when set, are a program and its arguments, run as given instead of Cmd.
	Args   []string
	Dir    string
	Cred   *credential
	Env    []string
	Out    io.Writer // stdout, and stderr unless Err is set; an *os.File is handed over as is
	Err    io.Writer // stderr, when apart from Out
	In     io.Reader // stdin; nil for none
	Cgroup taskCgroup
	// TTY, when set, is a terminal's slave end: the command's stdin, stdout and stderr, and
	// its session's controlling terminal (In and Out are then unused).
	TTY *os.File
}

// argv is the shell's command line that runs spec once released (holdScript).
func (spec shellSpec) argv() []string {
	if len(spec.Args) > 0 {
		return append([]string{"-c", holdExec, "sh"}, spec.Args...)
	}
	return []string{"-c", holdScript, "sh", spec.Cmd}
}

// what names the command in errors.
func (spec shellSpec) what() string {
	if len(spec.Args) > 0 {
		return strings.Join(spec.Args, " ")
	}
	return spec.Cmd
}

// startShell starts /bin/sh -c spec.Cmd in its own session and, when the task has a
// cgroup, inside it before the command runs. ctx (optional) kills the whole session.
func startShell(ctx context.Context, spec shellSpec) (*exec.Cmd, error) {
	var cmd *exec.Cmd
	if ctx != nil {
		cmd = exec.CommandContext(ctx, "/bin/sh", spec.argv()...)
		cmd.Cancel = func() error { return killGroup(cmd.Process.Pid, syscall.SIGKILL) }
		// Orphans that keep the output open must not hold Wait forever.
		cmd.WaitDelay = time.Second
	} else {
		cmd = exec.Command("/bin/sh", spec.argv()...)
	}
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	cmd.Stdin = spec.In
	cmd.Stdout = spec.Out
	cmd.Stderr = spec.Out
	if spec.Err != nil {
		cmd.Stderr = spec.Err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: spec.Cred.sys()}
	if spec.TTY != nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.TTY, spec.TTY, spec.TTY
		cmd.SysProcAttr.Setctty, cmd.SysProcAttr.Ctty = true, 0 // the child's stdin
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start %q: %w", spec.what(), err)
	}
	defer w.Close()
	cmd.ExtraFiles = []*os.File{r}
	err = cmd.Start()
	r.Close()
	if err != nil {
		return nil, fmt.Errorf("start %q in %s: %w", spec.what(), spec.Dir, err)
	}
	if spec.Cgroup != nil {
		if err := spec.Cgroup.AddProc(cmd.Process.Pid); err != nil {
			killGroup(cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			return nil, fmt.Errorf("start %q: move into cgroup: %w", spec.what(), err)
		}
	}
	if _, err := w.Write([]byte("go\n")); err != nil {
		killGroup(cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		return nil, fmt.Errorf("start %q: release: %w", spec.what(), err)
	}
	return cmd, nil
}

// runShell runs a command to its end within ctx and returns its exit code (128+signal
// when killed).
func runShell(ctx context.Context, spec shellSpec) (int, error) {
	cmd, err := startShell(ctx, spec)
	if err != nil {
		return -1, err
	}
	return waitShell(ctx, cmd, spec)
}

// waitShell waits for a command startShell started with ctx and returns its exit code.
func waitShell(ctx context.Context, cmd *exec.Cmd, spec shellSpec) (int, error) {
	err := cmd.Wait()
	if ctxErr := ctx.Err(); ctxErr != nil {
		return -1, fmt.Errorf("%q: %w", spec.what(), ctxErr)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return exitOf(ee.Sys().(syscall.WaitStatus), time.Now()).Code, nil
	}
	if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		return -1, fmt.Errorf("%q: %w", spec.what(), err)
	}
	return 0, nil
}

// killGroup signals a process group (a session leader's pid is its group's id). It never
// signals the agent's own group.
func killGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 || pgid == syscall.Getpgrp() {
		return nil
	}
	return syscall.Kill(-pgid, sig)
}

// cappedBuffer keeps the first max bytes written to it and drops the rest, so a chatty
// command neither blocks nor grows the agent's memory.
type cappedBuffer struct {
	buf []byte
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - len(b.buf); room > 0 {
		if len(p) < room {
			room = len(p)
		}
		b.buf = append(b.buf, p[:room]...)
	}
	return len(p), nil
}
