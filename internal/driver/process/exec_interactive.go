package process

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// ExecInteractive runs cmd (a program and its arguments) in the task's context, as Exec
// does (its user, work dir, environment and cgroup), streaming its input and output
// (berth exec, the console's terminal). With tty it runs on a new pseudo-terminal owned
// by the task's user, whose size follows resize; without, stdin is the command's and its
// stdout and stderr both go to stdout. ctx ends the command (its whole session).
//
// The stdin copier ends when stdin returns EOF or an error; a Read blocked on stdin
// cannot be interrupted, so a caller that keeps stdin open after the call ends should
// close it (as with the docker driver).
func (d *Driver) ExecInteractive(ctx context.Context, id string, cmd []string, tty bool, stdin io.Reader, stdout io.Writer, resize <-chan v4.TermSize) (int, error) {
	if len(cmd) == 0 {
		return -1, fmt.Errorf("exec in task %s: empty command", id)
	}
	st, err := d.snapshot(id)
	if err != nil {
		return -1, err
	}
	cred, err := d.credential(st)
	if err != nil {
		return -1, fmt.Errorf("task %s: %w", id, err)
	}
	spec := shellSpec{Args: cmd, Dir: st.WorkDir, Cred: cred, Env: st.Env, Cgroup: d.loadCgroup(st)}
	var code int
	if tty {
		code, err = execOnTerminal(ctx, spec, stdin, stdout, resize)
	} else {
		spec.In, spec.Out = stdin, stdout
		code, err = runShell(ctx, spec)
	}
	if err != nil {
		return code, fmt.Errorf("task %s: exec: %w", id, err)
	}
	return code, nil
}

// ttyDrain is how long the output of a terminal may still come once its command has ended:
// a process the command left in the background may hold the terminal open for ever.
const ttyDrain = time.Second

// execOnTerminal runs spec on a new pseudo-terminal: stdin goes to it, what it shows to
// stdout, and each size from resize to it, until the command ends.
func execOnTerminal(ctx context.Context, spec shellSpec, stdin io.Reader, stdout io.Writer, resize <-chan v4.TermSize) (int, error) {
	master, slave, err := openPTY()
	if err != nil {
		return -1, err
	}
	defer master.Close()
	if c := spec.Cred; c != nil {
		// The terminal is the user's, as a login's is: programs that check (tty, su, less)
		// work, and the user can set its modes.
		if err := slave.Chown(int(c.UID), int(c.GID)); err != nil {
			slave.Close()
			return -1, fmt.Errorf("give the terminal to the task's user: %w", err)
		}
	}
	spec.TTY, spec.Env = slave, withTerm(spec.Env)
	cmd, err := startShell(ctx, spec)
	slave.Close() // the command holds it now: the master reads EIO once nobody does
	if err != nil {
		return -1, err
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		// A size the terminal refuses leaves it as it was.
		driver.FollowResize(resize, done, func(sz v4.TermSize) { _ = setTermSize(master, sz) })
	})
	if stdin != nil {
		go io.Copy(master, stdin) // ends with stdin, or at the first write after master closes
	}
	output := make(chan struct{})
	go func() { defer close(output); copyTerminal(stdout, master) }()
	code, err := waitShell(ctx, cmd, spec)
	select {
	case <-output:
	case <-time.After(ttyDrain):
		master.Close()
		<-output
	}
	close(done)
	wg.Wait()
	return code, err
}

// copyTerminal copies what the terminal shows to w until the terminal is gone (a Read
// fails with EIO once its last holder closed it), master is closed, or w fails.
func copyTerminal(w io.Writer, master *os.File) {
	buf := make([]byte, 32<<10)
	for {
		n, err := master.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// withTerm adds TERM=xterm when env names no terminal type, as docker exec -t does.
func withTerm(env []string) []string {
	if slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "TERM=") }) {
		return env
	}
	return append(slices.Clip(env), "TERM=xterm")
}
