package containerd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/driver"
)

// A task past its memory limit is OOM-killed, and reported so.
func TestOOMKill(t *testing.T) {
	d, _ := newDriver(t, nil)
	tk := task(t, "hog", "a=xxxxxxxxxxxxxxxx; while true; do a=$a$a; done")
	tk.MemoryLimit = 16
	tk.RunToEnd = true
	start(t, d, tk)
	st := waitEnd(t, d, tk.ID)
	if st.Info.ExitCode != 137 || !st.Info.OOMKilled {
		t.Fatalf("ended as %+v, want an OOM kill", st.Info)
	}
}

// Stop: a task that ends on SIGTERM ends with its own code; one that ignores it is
// killed after the grace, and that SIGKILL is not an OOM kill.
func TestStopGrace(t *testing.T) {
	d, _ := newDriver(t, nil)
	polite := task(t, "polite", `trap "exit 7" TERM; while true; do sleep 0.1; done`)
	stubborn := task(t, "stubborn", `trap "" TERM; while true; do sleep 0.1; done`)
	stubborn.MemoryLimit = 64
	for _, tk := range []*driver.Task{polite, stubborn} {
		start(t, d, tk)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct {
		tk   *driver.Task
		code int
	}{{polite, 7}, {stubborn, 137}} {
		if err := d.Stop(ctx, c.tk.ID, time.Second); err != nil {
			t.Fatal(err)
		}
		st, err := d.Inspect(ctx, c.tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		if st.Running || st.Info.ExitCode != c.code || st.Info.OOMKilled {
			t.Fatalf("%s stopped as %+v, want exit code %d", c.tk.Name, st.Info, c.code)
		}
		if err := d.Stop(ctx, c.tk.ID, time.Second); err != nil {
			t.Fatalf("stop an ended task: %v", err)
		}
	}
	if err := d.Signal(ctx, polite.ID, 15); err == nil {
		t.Fatal("signal to an ended task: no error")
	}
}

// Exec: exit code and output; a command past its deadline is killed.
func TestExec(t *testing.T) {
	d, _ := newDriver(t, nil)
	tk := task(t, "sleeper", "sleep 300")
	tk.Env = []string{"GREETING=hello"}
	start(t, d, tk)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := d.Exec(ctx, tk.ID, "echo $GREETING; echo oops >&2; exit 4")
	if err != nil || res.ExitCode != 4 || string(res.Output) != "hello\noops\n" && string(res.Output) != "oops\nhello\n" {
		t.Fatalf("exec: %v, %d, %q", err, res.ExitCode, res.Output)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	if _, err := d.Exec(short, tk.ID, "sleep 31"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("exec past its deadline: %v", err)
	}
	// The killed command does not linger in the task.
	if out := execOK(t, d, tk.ID, "ps"); strings.Contains(out, "sleep 31") {
		t.Fatalf("the timed-out exec still runs:\n%s", out)
	}
}

// Files, volumes, env, working dir, host name and limits reach the container.
func TestSpec(t *testing.T) {
	d, _ := newDriver(t, nil)
	vol := t.TempDir()
	os.WriteFile(filepath.Join(vol, "data"), []byte("from-volume"), 0o644)
	tk := task(t, "spec", "sleep 300")
	tk.Container.WorkingDir = "/tmp"
	tk.Env = []string{"A=1"}
	tk.Files = []driver.File{{Path: "/etc/app/conf", Content: []byte("conf!"), ReadOnly: true}, {Path: "rel.txt", Content: []byte("rel")}}
	tk.Setup.Volumes = []driver.Mount{{HostPath: vol, ContainerPath: "/data", ReadOnly: true}}
	tk.Setup.Hostname = "pod-host"
	tk.Setup.NetworkMode = "NONE"
	tk.CPULimit, tk.MemoryLimit, tk.CPURequest = 0.5, 32, 0.25
	st := start(t, d, tk)
	out := execOK(t, d, tk.ID, "cat /etc/app/conf; echo; cat rel.txt; echo; cat /data/data; echo; echo $A; pwd; hostname")
	if want := "conf!\nrel\nfrom-volume\n1\n/tmp\npod-host\n"; out != want {
		t.Fatalf("in the container:\n%s\nwant:\n%s", out, want)
	}
	if res, _ := d.Exec(context.Background(), tk.ID, "echo x > /data/new"); res.ExitCode == 0 {
		t.Fatal("a read-only volume was written")
	}
	if st.Info.NetworkMode != "none" || st.Info.Hostname != "pod-host" {
		t.Fatalf("state %+v", st.Info)
	}
	cg := "/sys/fs/cgroup/cpu/berth/" + d.name(tk.ID)
	for file, want := range map[string]string{"cpu.cfs_quota_us": "50000", "cpu.shares": "256"} {
		if b, err := os.ReadFile(filepath.Join(cg, file)); err == nil && strings.TrimSpace(string(b)) != want {
			t.Errorf("%s = %s, want %s", file, b, want)
		}
	}
}

// A task joins the network namespace of the pod's first one; a HOST task is in the
// host's.
func TestNetworkJoinAndHost(t *testing.T) {
	d, _ := newDriver(t, nil)
	first := task(t, "first", "sleep 300")
	first.Setup.NetworkMode = "NONE"
	start(t, d, first)
	second := task(t, "second", "sleep 300")
	second.Setup = &driver.ContainerSetup{JoinTask: first.ID}
	st := start(t, d, second)
	host := task(t, "host", "sleep 300")
	start(t, d, host)
	netns := func(id string) string { return execOK(t, d, id, "ls -l /proc/self/ns/net | sed 's/.*-> //'") }
	hostNS, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	a, b, h := netns(first.ID), netns(second.ID), strings.TrimSpace(netns(host.ID))
	if a != b || strings.TrimSpace(a) == hostNS {
		t.Fatalf("first in %s, second in %s (host %s): want one namespace of their own", a, b, hostNS)
	}
	if h != hostNS {
		t.Fatalf("HOST task in %s, want the host's %s", h, hostNS)
	}
	if st.Info.NetworkMode != "user" {
		t.Fatalf("joined task's network mode %q, want user", st.Info.NetworkMode)
	}
	bad := task(t, "bridge", "sleep 1")
	bad.Setup.NetworkMode = "BRIDGE"
	if _, err := d.Start(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("BRIDGE: %v, want not supported", err)
	}
}

// The logger rotates the log per the driver's limits, and Logs reads across the files.
func TestLogRotation(t *testing.T) {
	d, _ := newDriver(t, func(c *Config) { c.LogLimits = logLimits(64<<10, 3) })
	// 2000 lines of about 60 bytes as records: about 150 KiB, three files' worth.
	tk := task(t, "chatty", `i=0; while [ $i -lt 2000 ]; do echo "line $i ....................................."; i=$((i+1)); done`)
	tk.RunToEnd = true
	start(t, d, tk)
	waitEnd(t, d, tk.ID)
	log := filepath.Join(tk.LogDir, "chatty.log")
	if _, err := os.Stat(log + ".1"); err != nil {
		t.Fatalf("no rotated file: %v", err)
	}
	if _, err := os.Stat(log + ".3"); err == nil {
		t.Fatal("more files than the limit")
	}
	if got := logs(t, d, tk.ID, driver.LogOptions{Tail: 2}); !strings.HasPrefix(got, "line 1998 ") || strings.Count(got, "\n") != 2 {
		t.Fatalf("tail 2 = %q", got)
	}
}
