package containerd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"syscall"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"

	"github.com/berthhq/berth/internal/driver"
)

// execOutputCap bounds what Exec keeps of a command's output.
const execOutputCap = 64 << 10

// Exec runs cmd with sh -c in the task's container, as its first process runs (user,
// env, working dir), and returns its exit code and its output, stdout and stderr
// interleaved, the first 64 KiB of it. When ctx ends first the command is killed and
// ctx's error is returned with the output so far.
func (d *Driver) Exec(ctx context.Context, id string, cmd string) (driver.ExecResult, error) {
	ctx = d.ctx(ctx)
	task, pspec, err := d.execSpec(ctx, id)
	if err != nil {
		return driver.ExecResult{}, err
	}
	pspec.Args = []string{"sh", "-c", cmd}
	pspec.Terminal = false
	out := &cappedBuffer{limit: execOutputCap}
	// The process and its FIFOs are removed even when ctx has ended.
	bctx, cancel := background()
	defer cancel()
	bctx = d.ctx(bctx)
	p, err := task.Exec(ctx, execID(), pspec, cio.NewCreator(cio.WithStreams(nil, out, out), cio.WithFIFODir(d.fifoDir)))
	if err != nil {
		return driver.ExecResult{}, d.wrap(err, "exec in task %s", id)
	}
	defer p.Delete(bctx, client.WithProcessKill)
	exited, err := p.Wait(bctx)
	if err != nil {
		return driver.ExecResult{}, d.wrap(err, "exec in task %s", id)
	}
	if err := p.Start(ctx); err != nil {
		return driver.ExecResult{ExitCode: -1}, d.wrap(err, "exec in task %s", id)
	}
	select {
	case st := <-exited:
		drainOutput(p.IO())
		code, _, err := st.Result()
		if err != nil {
			return driver.ExecResult{ExitCode: -1, Output: out.bytes()}, d.wrap(err, "exec in task %s", id)
		}
		return driver.ExecResult{ExitCode: int(code), Output: out.bytes()}, nil
	case <-ctx.Done():
		if err := p.Kill(bctx, syscall.SIGKILL); err != nil {
			d.log.Warn("could not kill exec after its deadline", "task", id, "err", err)
		}
		return driver.ExecResult{ExitCode: -1, Output: out.bytes()}, fmt.Errorf("exec in task %s: %w", id, ctx.Err())
	}
}

// outputDrainWait bounds how long Exec waits for a command's output after it ended: a
// daemon the command left holding its stdout would hold the result forever. The
// deferred Delete cancels the copy.
const outputDrainWait = 500 * time.Millisecond

// drainOutput waits until the process's output has been copied, or outputDrainWait.
func drainOutput(io cio.IO) {
	done := make(chan struct{})
	go func() {
		io.Wait()
		close(done)
	}()
	t := time.NewTimer(outputDrainWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// execID names one exec process.
func execID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "exec-" + hex.EncodeToString(b)
}

// cappedBuffer keeps the first limit bytes written to it and drops the rest, while
// accepting everything so the command never blocks on a full pipe. stdout and stderr
// are copied into it from two goroutines.
type cappedBuffer struct {
	mu    sync.Mutex
	limit int
	b     []byte
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.limit - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (c *cappedBuffer) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.b...)
}
