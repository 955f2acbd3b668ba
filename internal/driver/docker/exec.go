package docker

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// execOutputCap bounds what Exec keeps of a command's output.
const execOutputCap = 64 << 10

// Exec runs cmd with sh -c in the task's container (docker exec) and returns its exit
// code and its output, stdout and stderr interleaved, the first 64 KiB of it. When ctx
// ends first the command is killed (Docker cannot stop an exec itself) and ctx's error
// is returned with the output so far.
func (d *Driver) Exec(ctx context.Context, id string, cmd string) (driver.ExecResult, error) {
	if err := checkID(id); err != nil {
		return driver.ExecResult{}, err
	}
	execID, err := d.execCreate(ctx, id, client.ExecCreateOptions{Cmd: []string{"sh", "-c", cmd}, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return driver.ExecResult{}, err
	}
	hj, err := d.cli.ExecAttach(ctx, execID, client.ExecAttachOptions{})
	if err != nil {
		return driver.ExecResult{}, d.wrap(err, "exec in task %s", id)
	}
	defer hj.Close()
	// The hijacked connection does not watch ctx once established.
	stop := context.AfterFunc(ctx, hj.Close)
	defer stop()
	out := &cappedBuffer{limit: execOutputCap}
	_, copyErr := stdcopy.StdCopy(out, out, hj.Reader)
	if ctx.Err() != nil {
		d.killExec(execID)
		return driver.ExecResult{ExitCode: -1, Output: out.b}, fmt.Errorf("exec in task %s: %w", id, ctx.Err())
	}
	if copyErr != nil {
		return driver.ExecResult{ExitCode: -1, Output: out.b}, fmt.Errorf("exec in task %s: reading output: %w", id, copyErr)
	}
	code, err := d.execExitCode(ctx, id, execID)
	return driver.ExecResult{ExitCode: code, Output: out.b}, err
}

// ExecInteractive runs cmd in the task's container with its streams attached (berth
// exec -it): stdin is copied in until it ends (its end is passed on as EOF without a
// tty; with one, the terminal's ^D does that), the output (one stream with a tty,
// stdout and stderr interleaved without) goes to stdout, and terminal sizes from resize
// are applied. It returns the command's exit code once its output ends.
//
// The stdin copier ends when stdin returns EOF or an error; a Read blocked on stdin
// cannot be interrupted, so a caller that keeps stdin open after the call ends should
// close it.
func (d *Driver) ExecInteractive(ctx context.Context, id string, cmd []string, tty bool, stdin io.Reader, stdout io.Writer, resize <-chan v4.TermSize) (int, error) {
	if err := checkID(id); err != nil {
		return -1, err
	}
	if len(cmd) == 0 {
		return -1, fmt.Errorf("exec in task %s: empty command", id)
	}
	opts := client.ExecCreateOptions{Cmd: cmd, TTY: tty, AttachStdin: stdin != nil, AttachStdout: true, AttachStderr: true}
	execID, err := d.execCreate(ctx, id, opts)
	if err != nil {
		return -1, err
	}
	hj, err := d.cli.ExecAttach(ctx, execID, client.ExecAttachOptions{TTY: tty})
	if err != nil {
		return -1, d.wrap(err, "exec in task %s", id)
	}
	defer hj.Close()
	stop := context.AfterFunc(ctx, hj.Close)
	defer stop()

	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		driver.FollowResize(resize, done, func(sz v4.TermSize) {
			_, err := d.cli.ExecResize(ctx, execID, client.ExecResizeOptions{Height: uint(sz.Rows), Width: uint(sz.Cols)})
			if err != nil {
				d.log.Debug("exec resize", "task", id, "err", err)
			}
		})
	})
	if stdin != nil {
		go func() {
			io.Copy(hj.Conn, stdin)
			// Without a tty the command sees EOF. A tty's end of input is the ^D the
			// terminal sends; half-closing makes the daemon drop the tty's last output.
			if !tty {
				hj.CloseWrite()
			}
		}()
	}
	if tty {
		_, err = io.Copy(stdout, hj.Reader)
	} else {
		_, err = stdcopy.StdCopy(stdout, stdout, hj.Reader)
	}
	close(done)
	wg.Wait()
	if ctx.Err() != nil {
		d.killExec(execID)
		return -1, fmt.Errorf("exec in task %s: %w", id, ctx.Err())
	}
	if err != nil && !isClosedConn(err) {
		return -1, fmt.Errorf("exec in task %s: output: %w", id, err)
	}
	return d.execExitCode(ctx, id, execID)
}

func (d *Driver) execCreate(ctx context.Context, id string, opts client.ExecCreateOptions) (string, error) {
	var resp client.ExecCreateResult
	err := d.withContainer(ctx, id, func(ref string) error {
		var err error
		resp, err = d.cli.ExecCreate(ctx, ref, opts)
		return err
	})
	if err != nil {
		return "", d.wrap(err, "exec in task %s", id)
	}
	return resp.ID, nil
}

// execExitCode waits for Docker to record the exec's end (it may lag the end of the
// output by a moment) and returns its exit code.
func (d *Driver) execExitCode(ctx context.Context, id, execID string) (int, error) {
	for {
		ins, err := d.cli.ExecInspect(ctx, execID, client.ExecInspectOptions{})
		if err != nil {
			return -1, d.wrap(err, "exec in task %s: exit code", id)
		}
		if !ins.Running {
			return ins.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("exec in task %s: %w", id, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// killExec kills an exec's process, which Docker has no call for. Its pid is the host's,
// so this works only with a local daemon (and as root); otherwise the command runs on.
func (d *Driver) killExec(execID string) {
	ctx, cancel := background()
	defer cancel()
	ins, err := d.cli.ExecInspect(ctx, execID, client.ExecInspectOptions{})
	if err != nil || !ins.Running || ins.PID <= 0 || !strings.HasPrefix(d.host, "unix://") {
		return
	}
	if err := syscall.Kill(ins.PID, syscall.SIGKILL); err != nil {
		d.log.Warn("could not kill exec after its deadline", "exec", execID, "pid", ins.PID, "err", err)
	}
}

// cappedBuffer keeps the first limit bytes written to it and drops the rest, while
// accepting everything so the command never blocks on a full pipe.
type cappedBuffer struct {
	limit int
	b     []byte
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := c.limit - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func isClosedConn(err error) bool {
	return err != nil && strings.Contains(err.Error(), "use of closed network connection")
}
