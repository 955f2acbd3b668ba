package containerd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/opencontainers/runtime-spec/specs-go"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// ExecInteractive runs cmd in the task as its first process runs (user, env, working
// dir) with its streams attached (berth exec -it): stdin is copied in until it ends
// (its end is passed on as EOF without a tty; with one, the terminal's ^D does that),
// the output (the terminal's with a tty, stdout and stderr interleaved without) goes to
// stdout, and terminal sizes from resize are applied. It returns the command's exit
// code once it ended and its output was copied; a command that cannot be found or run
// exits with 127 or 126 and the runtime's message as its output, as with Docker.
//
// As with the Docker driver, a Read blocked on stdin cannot be interrupted: a caller
// that keeps stdin open after the call ends should close it.
func (d *Driver) ExecInteractive(ctx context.Context, id string, cmd []string, tty bool, stdin io.Reader, stdout io.Writer, resize <-chan v4.TermSize) (int, error) {
	if len(cmd) == 0 {
		return -1, fmt.Errorf("exec in task %s: empty command", id)
	}
	ctx = d.ctx(ctx)
	task, pspec, err := d.execSpec(ctx, id)
	if err != nil {
		return -1, err
	}
	pspec.Args, pspec.Terminal = cmd, tty
	// done ends the goroutines of the call once the process is deleted (the deferred
	// calls run in reverse: Delete, then this).
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		close(done)
		wg.Wait()
	}()
	streams := newExecStreams(stdin, stdout, tty, done)
	bctx, cancel := background()
	defer cancel()
	bctx = d.ctx(bctx)
	p, err := task.Exec(ctx, execID(), pspec, cio.NewCreator(streams.opts(d.fifoDir)...))
	if err != nil {
		return -1, d.wrap(err, "exec in task %s", id)
	}
	defer p.Delete(bctx, client.WithProcessKill)
	exited, err := p.Wait(bctx)
	if err != nil {
		return -1, d.wrap(err, "exec in task %s", id)
	}
	if err := p.Start(ctx); err != nil {
		if code, ok := startFailureCode(err); ok {
			// As Docker and a shell: the runtime's message, and 127 or 126.
			fmt.Fprintf(streams.out, "%v\n", err)
			return code, nil
		}
		return -1, d.wrap(err, "exec in task %s", id)
	}
	wg.Go(func() {
		driver.FollowResize(resize, done, func(sz v4.TermSize) {
			if err := p.Resize(bctx, uint32(sz.Cols), uint32(sz.Rows)); err != nil {
				d.log.Debug("exec resize", "task", id, "err", err)
			}
		})
	})
	if streams.eof != nil && !tty {
		// Closed only once the process started: the shim opens its stdin at the start.
		wg.Go(func() {
			select {
			case <-streams.eof:
				if err := p.CloseIO(bctx, client.WithStdinCloser); err != nil {
					d.log.Debug("exec close stdin", "task", id, "err", err)
				}
			case <-done:
			}
		})
	}
	select {
	case st := <-exited:
		drainOutput(p.IO())
		code, _, err := st.Result()
		if err != nil {
			return -1, d.wrap(err, "exec in task %s", id)
		}
		return int(code), nil
	case <-ctx.Done():
		if err := p.Kill(bctx, syscall.SIGKILL); err != nil {
			d.log.Warn("could not kill exec after its deadline", "task", id, "err", err)
		}
		return -1, fmt.Errorf("exec in task %s: %w", id, ctx.Err())
	}
}

// execStreams are an exec's stdin and output as containerd's IO copies them.
type execStreams struct {
	in  io.Reader // nil without stdin
	out *lockedWriter
	tty bool
	// eof is closed once stdin ended; nil without stdin.
	eof chan struct{}
}

// newExecStreams wraps stdin so that its end is seen: without a tty it is passed on
// (CloseIO); with one it is held back until done, because containerd's IO closes the
// stdin FIFO at its end and the shim then shuts the terminal, dropping the output still
// to come (a terminal's end of input is the ^D it sends).
func newExecStreams(stdin io.Reader, stdout io.Writer, tty bool, done <-chan struct{}) *execStreams {
	s := &execStreams{out: &lockedWriter{w: stdout}, tty: tty}
	if stdin != nil {
		s.eof = make(chan struct{})
		r := &eofReader{r: stdin, eof: s.eof}
		if tty {
			r.hold = done
		}
		s.in = r
	}
	return s
}

func (s *execStreams) opts(fifoDir string) []cio.Opt {
	opts := []cio.Opt{cio.WithStreams(s.in, s.out, s.out), cio.WithFIFODir(fifoDir)}
	if s.tty {
		opts = append(opts, cio.WithTerminal)
	}
	return opts
}

// startFailureCode is the exit code a shell gives a command the runtime could not
// start: 127 when it is not found, 126 when it cannot be run.
func startFailureCode(err error) (int, bool) {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "no such file or directory"), strings.Contains(msg, "executable file not found"):
		return 127, true
	case strings.Contains(msg, "permission denied"):
		return 126, true
	}
	return 0, false
}

// execSpec returns the task of id and a copy of its first process's spec, the base of
// an exec's.
func (d *Driver) execSpec(ctx context.Context, id string) (client.Task, *specs.Process, error) {
	c, err := d.load(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return nil, nil, d.wrap(err, "exec in task %s", id)
	}
	spec, err := c.Spec(ctx)
	if err != nil {
		return nil, nil, d.wrap(err, "exec in task %s: spec", id)
	}
	if spec.Process == nil {
		return nil, nil, fmt.Errorf("exec in task %s: its spec has no process", id)
	}
	pspec := *spec.Process
	pspec.ConsoleSize = nil
	return task, &pspec, nil
}

// PIDs returns the host PIDs of the task's processes (its first and every one it or an
// exec started), as the runtime lists them.
func (d *Driver) PIDs(ctx context.Context, id string) ([]int, error) {
	ctx = d.ctx(ctx)
	c, err := d.load(ctx, id)
	if err != nil {
		return nil, err
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return nil, d.wrap(err, "processes of %s", id)
	}
	procs, err := task.Pids(ctx)
	if err != nil {
		return nil, d.wrap(err, "processes of %s", id)
	}
	pids := make([]int, 0, len(procs))
	for _, p := range procs {
		pids = append(pids, int(p.Pid))
	}
	return pids, nil
}

// eofReader closes eof once r has ended (EOF or an error), and with hold set, returns
// that end only once hold is closed.
type eofReader struct {
	r    io.Reader
	eof  chan struct{}
	hold <-chan struct{}
	once sync.Once
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == nil {
		return n, nil
	}
	e.once.Do(func() { close(e.eof) })
	if n > 0 {
		return n, nil // the end again at the next Read
	}
	if e.hold != nil {
		<-e.hold
	}
	return 0, err
}

// lockedWriter serializes the writes of the stdout and stderr copiers into one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
