package lbgroup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Files of the group's HAProxy in its directory.
const (
	configFile = "haproxy.cfg"
	pidFile    = "haproxy.pid"
	socketFile = "admin.sock"
)

// commandTimeout bounds one run of the haproxy command (a check or a start).
const commandTimeout = 30 * time.Second

// haproxy runs the haproxy command in dir.
type haproxy struct {
	bin string
	dir string
}

func (h haproxy) path(name string) string { return filepath.Join(h.dir, name) }

// check validates config with `haproxy -c`, from a file next to the live one.
func (h haproxy) check(ctx context.Context, config string) error {
	next := h.path(configFile + ".next")
	if err := os.WriteFile(next, []byte(config), 0o600); err != nil {
		return fmt.Errorf("write the configuration to check: %w", err)
	}
	defer os.Remove(next)
	return h.run(ctx, "-c", "-f", next)
}

// start starts HAProxy on the live configuration as a daemon. Over running processes
// (pids), the new one takes their listening sockets through the runtime API (-x), so no
// connection is refused during the handover, and tells them to finish their
// connections and leave (-sf).
func (h haproxy) start(ctx context.Context, pids []int) error {
	args := []string{"-D", "-f", h.path(configFile), "-p", h.path(pidFile)}
	if len(pids) > 0 {
		if _, err := os.Stat(h.path(socketFile)); err == nil {
			args = append(args, "-x", h.path(socketFile))
		}
		args = append(args, "-sf")
		for _, p := range pids {
			args = append(args, strconv.Itoa(p))
		}
	}
	return h.run(ctx, args...)
}

func (h haproxy) run(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		var lines []string
		for l := range strings.Lines(out.String()) {
			if !strings.HasPrefix(l, "[NOTICE]") { // its version and path
				lines = append(lines, strings.TrimSpace(l))
			}
		}
		msg := strings.Join(lines, "\n")
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("%s %s: %s", filepath.Base(h.bin), args[0], truncate(msg, 2000))
	}
	return nil
}

// running returns the pids of the HAProxy processes of the pid file that are alive.
func (h haproxy) running() []int {
	data, err := os.ReadFile(h.path(pidFile))
	if err != nil {
		return nil
	}
	var out []int
	for f := range strings.FieldsSeq(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid < 2 {
			continue
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err == nil && strings.TrimSpace(string(comm)) == "haproxy" {
			out = append(out, pid)
		}
	}
	return out
}

// stop asks the running processes to finish their connections and leave (SIGUSR1,
// HAProxy's soft stop).
func (h haproxy) stop() error {
	var errs []error
	for _, pid := range h.running() {
		if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("stop haproxy %d: %w", pid, err))
		}
	}
	return errors.Join(errs...)
}

// Stop soft-stops a group's HAProxy that an earlier run left in dir, for an agent that
// no longer serves a group.
func Stop(dir, bin string) error {
	if bin == "" {
		bin = "haproxy"
	}
	return haproxy{bin: bin, dir: dir}.stop()
}
