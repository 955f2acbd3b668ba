package executor

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/docker"
	"github.com/berthhq/berth/internal/driver/drivertest"
)

// benchImage is the busybox image the Docker tests import.
const benchImage = drivertest.BusyboxImage

// BenchmarkPodStart measures how long a container pod takes from Run to Running on the
// real Docker driver: a pod of one main container, and the same with a sidecar and two
// init tasks (which also gets a network holder). The difference is what the lifecycle
// costs a pod's start (docs/benchmarks.md). Run with -benchtime=Nx: each op starts,
// kills and removes a pod.
func BenchmarkPodStart(b *testing.B) {
	drv := benchDocker(b)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	rec := &recorder{reports: map[string][]v4.TaskGroupStatus{}}
	e := New(Config{NodeName: "bench-podstart", HostIP: "127.0.0.1", DataDir: b.TempDir(),
		Drivers: map[string]driver.Driver{"docker": drv}, Logger: quiet, Report: rec.report})
	b.Cleanup(e.Close)
	for _, variant := range []struct {
		name  string
		roles bool
	}{{"main", false}, {"init2+sidecar", true}} {
		b.Run(variant.name+"/docker", func(b *testing.B) {
			var total time.Duration
			for n := 0; b.Loop(); n++ {
				tg := benchPod(fmt.Sprintf("%s-%d-%d", map[bool]string{false: "plain", true: "roles"}[variant.roles], os.Getpid(), n), variant.roles)
				began := time.Now()
				e.Run(context.Background(), tg)
				waitRunning(b, rec, tg.Metadata.Name)
				total += time.Since(began)
				b.StopTimer()
				e.Kill(testNS, tg.Metadata.Name)
				if err := e.Remove(context.Background(), testNS, tg.Metadata.Name); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-running/op")
		})
	}
}

// benchPod is a BRIDGE pod of a main container, and with roles a sidecar and two init
// tasks.
func benchPod(name string, roles bool) *v4.TaskGroup {
	tg := containerTG(name)
	tg.Spec.KillGracePeriod = 1
	spec := &tg.Spec.Template.Spec
	spec.NetworkMode = "BRIDGE"
	c := func(n, shell string, lc *v4.Lifecycle) v4.Container {
		return v4.Container{Name: n, Image: benchImage, Command: "/bin/sh", Args: []string{"-c", shell}, Lifecycle: lc}
	}
	if roles {
		spec.Containers = append(spec.Containers, c("side", "exec sleep 3600", &v4.Lifecycle{Sidecar: true}),
			c("init1", "true", &v4.Lifecycle{Init: true}), c("init2", "true", &v4.Lifecycle{Init: true}))
	}
	spec.Containers = append(spec.Containers, c("web", "exec sleep 3600", nil))
	return tg
}

func waitRunning(b *testing.B, rec *recorder, name string) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if rs := rec.all(name); len(rs) > 0 {
			switch ph := rs[len(rs)-1].Phase; {
			case ph == v4.StatusRunning:
				return
			case v4.Terminal(ph):
				b.Fatalf("pod %s ended %s: %s", name, ph, rs[len(rs)-1].Message)
			}
		}
		time.Sleep(time.Millisecond)
	}
	b.Fatalf("pod %s not running within a minute", name)
}

// benchDocker is the real Docker driver, with the busybox image imported; it skips
// without root or Docker.
func benchDocker(b *testing.B) driver.Driver {
	if os.Geteuid() != 0 || exec.Command("docker", "info").Run() != nil {
		b.Skip("needs root and a Docker daemon")
	}
	if exec.Command("docker", "image", "inspect", benchImage).Run() != nil {
		rootfs, err := drivertest.BusyboxRootfs()
		if err != nil {
			b.Skip(err)
		}
		cmd := exec.Command("docker", "import", "-", benchImage)
		cmd.Stdin = rootfs
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("docker import: %v\n%s", err, out)
		}
	}
	d, err := docker.New(docker.Config{DataDir: b.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	return d
}
