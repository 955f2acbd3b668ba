package drivertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ContainerdBinary is Debian's containerd, which the containerd driver's tests run.
const ContainerdBinary = "/usr/bin/containerd"

// ContainerdMissing says why containerd tests cannot run here (not root, no
// containerd), or is empty when they can.
func ContainerdMissing() string {
	if os.Geteuid() != 0 {
		return "containerd tests need root"
	}
	if _, err := os.Stat(ContainerdBinary); err != nil {
		return "containerd is not installed: " + err.Error()
	}
	return ""
}

// Containerd is a private containerd instance: its own root, state and socket under
// one directory, never the node's /run/containerd (the shims it starts still put their
// sockets under /run/containerd/s, named after this instance's address).
type Containerd struct {
	Address string
	cmd     *exec.Cmd
	done    chan struct{}
}

// StartContainerd starts containerd on a config of its own under dir (without the CRI
// plugin) and returns once it serves; its log is dir/containerd.log.
func StartContainerd(dir string) (*Containerd, error) {
	sock := filepath.Join(dir, "containerd.sock")
	if len(sock) > 100 {
		return nil, fmt.Errorf("socket path %s is too long for a unix socket", sock)
	}
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), sock)
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(ContainerdBinary, "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a test interrupted does not take it down half way, and
	// Stop signals only it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start containerd: %w", err)
	}
	c := &Containerd{Address: sock, cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(c.done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if conn, err := net.Dial("unix", sock); err == nil {
			conn.Close()
			return c, nil
		}
		select {
		case <-c.done:
			log, _ := os.ReadFile(filepath.Join(dir, "containerd.log"))
			return nil, fmt.Errorf("containerd exited at start:\n%s", log)
		case <-ctx.Done():
			c.Stop()
			return nil, errors.New("containerd did not serve within 30s")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Sweep kills and deletes every task and container of namespace ns with ctr, so no
// shim outlives the instance (a test that failed half way may leave some).
func (c *Containerd) Sweep(ns string) {
	ctr := func(args ...string) []string {
		out, _ := exec.Command("ctr", append([]string{"--address", c.Address, "--namespace", ns}, args...)...).Output()
		return strings.Fields(string(out))
	}
	for _, id := range ctr("tasks", "ls", "-q") {
		ctr("tasks", "kill", "--all", "--signal", "SIGKILL", id)
		ctr("tasks", "delete", "--force", id)
	}
	if ids := ctr("containers", "ls", "-q"); len(ids) > 0 {
		ctr(append([]string{"containers", "rm"}, ids...)...)
	}
}

// Stop ends containerd (SIGTERM, then SIGKILL after 10 s). The shims of tasks still
// running are the caller's to end before (Sweep; their tasks would outlive it).
func (c *Containerd) Stop() {
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
	}
}
