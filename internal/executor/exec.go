package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// ErrNoTerminal is returned for a terminal asked of a driver that cannot attach one.
var ErrNoTerminal = errors.New("the task's driver cannot attach a terminal")

// ExecRequest is one command run in a task (berth exec).
type ExecRequest struct {
	Task   string // "" is the pod's first task
	Cmd    []string
	TTY    bool
	Stdin  io.Reader // nil: no input
	Stdout io.Writer // stdout and stderr (interleaved without a terminal)
	Resize <-chan v4.TermSize
}

// Exec runs a command in a task and returns its exit code. Drivers that attach terminals
// (driver.Interactive: containers) stream stdin and output; the others (processes) run
// the command as a shell line in the task's context, without input, and write its output
// once it ends.
func (e *Executor) Exec(ctx context.Context, namespace, name string, req ExecRequest) (int, error) {
	if len(req.Cmd) == 0 {
		return 0, errors.New("exec: no command")
	}
	t, err := e.task(namespace, name, req.Task)
	if err != nil {
		return 0, err
	}
	if in, ok := t.drv.(driver.Interactive); ok {
		stdin := req.Stdin
		if stdin == nil {
			stdin = strings.NewReader("")
		}
		code, err := in.ExecInteractive(ctx, t.id, req.Cmd, req.TTY, stdin, req.Stdout, req.Resize)
		if err != nil {
			return code, fmt.Errorf("exec in task %s: %w", t.name, err)
		}
		return code, nil
	}
	if req.TTY {
		return 0, fmt.Errorf("task %s (%s driver): %w", t.name, t.drv.Name(), ErrNoTerminal)
	}
	res, err := t.drv.Exec(ctx, t.id, shellJoin(req.Cmd))
	if err != nil {
		return res.ExitCode, fmt.Errorf("exec in task %s: %w", t.name, err)
	}
	if _, err := req.Stdout.Write(res.Output); err != nil {
		return res.ExitCode, fmt.Errorf("exec in task %s: write output: %w", t.name, err)
	}
	return res.ExitCode, nil
}

// shellJoin quotes args for /bin/sh so each reaches the command as given.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
