package podbench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/containerd"
	"github.com/berthhq/berth/internal/driver/docker"
	"github.com/berthhq/berth/internal/driver/drivertest"
)

func TestMain(m *testing.M) {
	containerd.RunLoggerIfCalled() // the containerd shim starts this binary as the tasks' logger
	os.Exit(m.Run())
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// runtime is one container runtime under test, and the OCI runtime its pods name (""
// for the driver's default, runc).
type runtime struct {
	name    string
	drv     driver.Driver
	handler string
}

// runtimes returns the runtimes this machine has: the Docker daemon's, and a private
// containerd the benchmark starts (and stops when it ends).
func runtimes(b *testing.B) []runtime {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	var out []runtime
	if d := dockerDriver(b); d != nil {
		out = append(out, runtime{"docker", d, ""})
	}
	if d := containerdDriver(b); d != nil {
		out = append(out, runtime{"containerd", d, ""})
		if _, ok := containerd.DefaultHandlers()["crun"]; ok {
			out = append(out, runtime{"containerd-crun", d, "crun"})
		}
	}
	if len(out) == 0 {
		b.Skip("neither Docker nor containerd is here")
	}
	return out
}

func dockerDriver(b *testing.B) driver.Driver {
	if exec.Command("docker", "info").Run() != nil {
		b.Log("no Docker daemon: Docker is not measured")
		return nil
	}
	if exec.Command("docker", "image", "inspect", drivertest.BusyboxImage).Run() != nil {
		rootfs, err := drivertest.BusyboxRootfs()
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command("docker", "import", "-", drivertest.BusyboxImage)
		cmd.Stdin = rootfs
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("docker import: %v\n%s", err, out)
		}
	}
	d, err := docker.New(docker.Config{DataDir: b.TempDir(), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	return d
}

func containerdDriver(b *testing.B) driver.Driver {
	if why := drivertest.ContainerdMissing(); why != "" {
		b.Log(why + ": containerd is not measured")
		return nil
	}
	dir, err := os.MkdirTemp("", "ctdb") // short: a unix socket's path is bounded
	if err != nil {
		b.Fatal(err)
	}
	c, err := drivertest.StartContainerd(dir)
	if err != nil {
		b.Fatal(err)
	}
	d, err := containerd.New(containerd.Config{Address: c.Address, DataDir: filepath.Join(dir, "driver"),
		RuntimeRoot: filepath.Join(dir, "runc"), Runtimes: containerd.DefaultHandlers(), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		d.Close()
		c.Sweep(containerd.DefaultNamespace)
		c.Stop()
		os.RemoveAll(dir)
	})
	archive, err := drivertest.BusyboxArchive()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := d.Import(ctx, archive); err != nil {
		b.Fatal(err)
	}
	return d
}

// reports keeps the latest status of every pod.
type reports struct {
	mu   sync.Mutex
	last map[string]v4.TaskGroupStatus
}

func (r *reports) report(_, name string, st v4.TaskGroupStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last[name] = st
}

// waitRunning waits until pod name runs; it fails the benchmark when the pod ends.
func (r *reports) waitRunning(b *testing.B, name string) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		st, ok := r.last[name]
		r.mu.Unlock()
		switch {
		case ok && st.Phase == v4.StatusRunning:
			return
		case ok && v4.Terminal(st.Phase):
			b.Fatalf("pod %s ended %s: %s", name, st.Phase, st.Message)
		}
		time.Sleep(time.Millisecond)
	}
	b.Fatalf("pod %s is not running after a minute", name)
}

// podSpec is a HOST pod (every runtime has it) of the containers given.
func podSpec(name string, containers ...v4.Container) *v4.TaskGroup {
	tg := &v4.TaskGroup{}
	tg.Metadata.Namespace, tg.Metadata.Name = "bench", name
	tg.Spec.Owner = v4.OwnerRef{Kind: v4.KindApplication, Name: "bench"}
	tg.Spec.Node = "bench-node"
	tg.Spec.KillGracePeriod = 1
	tg.Spec.Template.Spec.NetworkMode = "HOST"
	tg.Spec.Template.Spec.Containers = containers
	return tg
}

func busybox(name, shell string, lc *v4.Lifecycle) v4.Container {
	return v4.Container{Name: name, Image: drivertest.BusyboxImage, Command: "/bin/sh", Args: []string{"-c", shell}, Lifecycle: lc}
}

// unique names a pod of a run.
func unique(what string, n int) string {
	return fmt.Sprintf("%s-%d-%d", strings.ReplaceAll(what, "+", "-"), os.Getpid(), n)
}
