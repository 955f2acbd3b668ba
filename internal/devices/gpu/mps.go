package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MPS runs one NVIDIA MPS control daemon per card that has shares: the shares of a card
// become clients of its daemon, which caps each one's SMs and memory with the limits the
// client's env asks (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT).
// Each daemon has its own pipe and log directories under Dir, sees only its card
// (CUDA_VISIBLE_DEVICES=<UUID>), and outlives the agent: a later agent finds it by its pid
// file and uses it again.
type MPS struct {
	// Control is the nvidia-cuda-mps-control command; Dir holds <UUID>/pipe and <UUID>/log.
	Control string
	Dir     string

	mu sync.Mutex // one start at a time per agent
}

// MPSControl is the MPS control daemon's command.
const MPSControl = "nvidia-cuda-mps-control"

// mpsStartWait bounds how long a daemon takes to write its pid file.
const mpsStartWait = 10 * time.Second

// PipeDir is the pipe directory of the card's daemon: clients find the daemon there
// (CUDA_MPS_PIPE_DIRECTORY), so containers get it mounted.
func (m *MPS) PipeDir(uuid string) string { return filepath.Join(m.Dir, uuid, "pipe") }

func (m *MPS) logDir(uuid string) string { return filepath.Join(m.Dir, uuid, "log") }

// pidFile is where the control daemon writes its PID.
func (m *MPS) pidFile(uuid string) string {
	return filepath.Join(m.PipeDir(uuid), "nvidia-cuda-mps-control.pid")
}

// Running reports whether the card's daemon runs (its pid file names a live process).
func (m *MPS) Running(uuid string) bool {
	b, err := os.ReadFile(m.pidFile(uuid))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}

// Ensure starts the card's daemon unless it runs, and returns its pipe directory.
func (m *MPS) Ensure(ctx context.Context, uuid string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pipe := m.PipeDir(uuid)
	if m.Running(uuid) {
		return pipe, nil
	}
	for _, dir := range []string{pipe, m.logDir(uuid)} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("MPS for %s: %w", uuid, err)
		}
	}
	os.Remove(m.pidFile(uuid)) // a dead daemon's
	cmd := exec.CommandContext(ctx, m.Control, "-d")
	cmd.Env = m.env(uuid)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("start the MPS control daemon of %s: %w: %s", uuid, err, strings.TrimSpace(string(out)))
	}
	deadline := time.Now().Add(mpsStartWait)
	for !m.Running(uuid) {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the MPS control daemon of %s wrote no pid file in %s (%s)", uuid, mpsStartWait, m.pidFile(uuid))
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return pipe, nil
}

// Stop asks the card's daemon to quit (when it runs).
func (m *MPS) Stop(ctx context.Context, uuid string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.Running(uuid) {
		return nil
	}
	cmd := exec.CommandContext(ctx, m.Control)
	cmd.Env = m.env(uuid)
	cmd.Stdin = strings.NewReader("quit\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("stop the MPS control daemon of %s: %w: %s", uuid, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (m *MPS) env(uuid string) []string {
	return append(os.Environ(),
		"CUDA_VISIBLE_DEVICES="+uuid,
		"CUDA_MPS_PIPE_DIRECTORY="+m.PipeDir(uuid),
		"CUDA_MPS_LOG_DIRECTORY="+m.logDir(uuid),
	)
}

// MPSClientEnv is a share's env as a client of its card's daemon: the SM share and the
// memory limit of device 0 (the only card the client sees).
func MPSClientEnv(pipeDir string, cores, memMiB int) [][2]string {
	return [][2]string{
		{"CUDA_MPS_PIPE_DIRECTORY", pipeDir},
		{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", strconv.Itoa(cores)},
		{"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", fmt.Sprintf("0=%dM", memMiB)},
	}
}

// HAMiClientEnv is a share's env for HAMi-core's libvgpu.so (preloaded from lib): the
// memory limit and SM share of CUDA device 0.
func HAMiClientEnv(lib string, cores, memMiB int) [][2]string {
	return [][2]string{
		{"LD_PRELOAD", lib},
		{"CUDA_DEVICE_MEMORY_LIMIT_0", fmt.Sprintf("%dm", memMiB)},
		{"CUDA_DEVICE_SM_LIMIT", strconv.Itoa(cores)},
	}
}

// ErrNoMPS says the MPS control daemon is not installed.
var ErrNoMPS = errors.New(MPSControl + " is not installed")

// FindMPS returns the MPS control command on PATH.
func FindMPS() (string, error) {
	p, err := exec.LookPath(MPSControl)
	if err != nil {
		return "", ErrNoMPS
	}
	return p, nil
}
