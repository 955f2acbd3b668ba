package flexvolume

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// The statuses of a driver's reply.
const (
	statusSuccess      = "Success"
	statusFailure      = "Failure"
	statusNotSupported = "Not supported"
)

// ErrNotSupported is a driver's "Not supported" answer to a call.
var ErrNotSupported = errors.New("not supported by the driver")

// maxOutput bounds what the agent reads of a driver's stdout and stderr: a reply is a
// line of JSON, and a driver that writes more must not fill the agent's memory.
const maxOutput = 64 << 10

// driverEnv is the whole environment of a driver: it never inherits the agent's, which
// may hold its own secrets (a join token in $BERTH_JOIN_TOKEN).
var driverEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"}

// reply is a driver's answer (Kubernetes' DriverStatus).
type reply struct {
	Status       string `json:"status"`
	Message      string `json:"message,omitempty"`
	Device       string `json:"device,omitempty"`
	Capabilities *struct {
		Attach bool `json:"attach"`
	} `json:"capabilities,omitempty"`
}

// call runs the driver at path with args (args[0] is the call's name) under the call
// timeout, and returns its reply: ErrNotSupported for "Not supported", an error with
// the driver's message for "Failure". A driver past its timeout is killed with its
// whole process group.
func (m *Manager) call(ctx context.Context, name, path string, args ...string) (*reply, error) {
	ctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
	defer cancel()
	var stdout, stderr limitedBuffer
	stdout.max, stderr.max = maxOutput, 4<<10
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env, cmd.Dir = driverEnv, "/"
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Its own process group, killed whole: a shell script's children (a mount helper
	// that hangs) go with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A child that escaped the group may hold the pipes: stop reading after this.
	cmd.WaitDelay = time.Second
	start := time.Now()
	err := cmd.Run()
	m.log.Debug("FlexVolume driver call", "driver", name, "call", args[0], "took", time.Since(start), "err", err)
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && err != nil {
		return nil, fmt.Errorf("FlexVolume driver %s: %s: no answer within %v, killed", name, args[0], m.opts.Timeout)
	}
	if ctx.Err() != nil && err != nil {
		return nil, fmt.Errorf("FlexVolume driver %s: %s: %w", name, args[0], ctx.Err())
	}
	r, perr := parseReply(stdout.Bytes())
	if perr != nil {
		detail := strings.TrimSpace(stderr.String())
		if err != nil {
			detail = fmt.Sprintf("%v; %s", err, detail)
		}
		return nil, fmt.Errorf("FlexVolume driver %s: %s: %w (stderr: %s)", name, args[0], perr, clip(detail, 512))
	}
	switch r.Status {
	case statusSuccess:
		return r, nil
	case statusNotSupported:
		return r, fmt.Errorf("FlexVolume driver %s: %s: %w", name, args[0], ErrNotSupported)
	case statusFailure:
		return r, fmt.Errorf("FlexVolume driver %s: %s failed: %s", name, args[0], clip(r.Message, 1024))
	}
	return r, fmt.Errorf("FlexVolume driver %s: %s: unknown status %q", name, args[0], clip(r.Status, 64))
}

// parseReply reads a driver's JSON reply: the whole output, else its last line that is
// a JSON object (a driver that logs to stdout before answering).
func parseReply(out []byte) (*reply, error) {
	out = bytes.TrimSpace(out)
	var r reply
	if err := json.Unmarshal(out, &r); err == nil && r.Status != "" {
		return &r, nil
	}
	lines := bytes.Split(out, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		l := bytes.TrimSpace(lines[i])
		if len(l) == 0 || l[0] != '{' {
			continue
		}
		r = reply{}
		if err := json.Unmarshal(l, &r); err == nil && r.Status != "" {
			return &r, nil
		}
		break
	}
	return nil, fmt.Errorf("reply is not a driver's JSON status: %q", clip(string(out), 256))
}

// clip cuts s to n bytes.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// limitedBuffer keeps the first max bytes written to it and drops the rest, so that a
// driver writing without end neither blocks on its pipe nor fills memory.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
