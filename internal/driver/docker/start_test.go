package docker

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/cpubind"
	"github.com/berthhq/berth/internal/driver/drivertest"
)

func TestCommandSemantics(t *testing.T) {
	d := parallelDriver(t)

	// No entrypoint: command + args are the CMD; the env reaches it.
	plain := newTask(t, d, "plain", imgPlain, "/bin/sh", "-c", "echo plain-$GREETING; exec sleep 30")
	plain.Env = []string{"GREETING=hello"}
	mustStart(t, d, plain)
	waitLog(t, d, plain.ID, "plain-hello")

	// Entrypoint sh -c: args alone are its argument.
	args := newTask(t, d, "args", imgEntry, "", "echo ep-$GREETING; exec sleep 30")
	args.Env = []string{"GREETING=hi"}
	mustStart(t, d, args)
	waitLog(t, d, args.ID, "ep-hi")

	// Entrypoint, with a command: the command replaces it.
	repl := newTask(t, d, "repl", imgEntry, "/bin/echo", "replaced", "entrypoint")
	st, err := d.Start(ctxT(t, 20*time.Second), repl)
	if err == nil {
		st = drivertest.WaitEnded(t, d, repl.ID, 10*time.Second)
	}
	if st.Info.ExitCode != 0 {
		t.Fatalf("replaced entrypoint: %+v %v", st.Info, err)
	}
	waitLog(t, d, repl.ID, "replaced entrypoint")

	// No entrypoint and no command: refused before anything is created.
	none := newTask(t, d, "none", imgPlain, "", "x")
	_, err = d.Start(ctxT(t, 20*time.Second), none)
	if err == nil || !strings.Contains(err.Error(), "image test/busybox:1 has no entrypoint and the task has no command") {
		t.Fatalf("empty command: %v", err)
	}
	if _, err := d.Inspect(context.Background(), none.ID); !isNotFound(err) {
		t.Fatalf("a refused task left a container: %v", err)
	}
	// Starting an existing ID is an error.
	if _, err := d.Start(ctxT(t, 20*time.Second), plain); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second start: %v", err)
	}
}

func TestStartFailures(t *testing.T) {
	d := parallelDriver(t)

	missing := newTask(t, d, "missing", "127.0.0.1:1/berth/missing:1", "/bin/true")
	_, err := d.Start(ctxT(t, 30*time.Second), missing)
	if err == nil || !strings.Contains(err.Error(), "pull image 127.0.0.1:1/berth/missing:1: ") {
		t.Fatalf("missing image: %v", err)
	}

	net := newTask(t, d, "net", imgPlain, "/bin/sleep", "30")
	net.Setup.NetworkMode = "berth-no-such-network"
	_, err = d.Start(ctxT(t, 30*time.Second), net)
	if err == nil || !strings.Contains(err.Error(), `network "berth-no-such-network" not found`) {
		t.Fatalf("unknown network: %v", err)
	}

	// A command that does not exist: the container is kept with Docker's message.
	nocmd := newTask(t, d, "nocmd", imgPlain, "/bin/no-such-command")
	st, err := d.Start(ctxT(t, 30*time.Second), nocmd)
	if err == nil || st.Running || st.Info.Message == "" {
		t.Fatalf("missing command: %+v %v", st, err)
	}
	if err := d.Remove(context.Background(), nocmd.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Inspect(context.Background(), nocmd.ID); !isNotFound(err) {
		t.Fatalf("after Remove: %v", err)
	}
}

func TestResourcesAndParameters(t *testing.T) {
	d := parallelDriver(t)
	task := newTask(t, d, "res", imgPlain, "/bin/sleep", "30")
	task.CPURequest, task.CPULimit, task.MemoryLimit = 0.5, 1.5, 64
	task.Container.WorkingDir = "/tmp"
	task.Container.Parameters = []v4.Parameter{
		{Key: "ulimit", Value: "nofile=1024:2048"}, {Key: "shm-size", Value: "32"}, {Key: "cap-add", Value: "NET_ADMIN"},
		{Key: "pids-limit", Value: "100"}, {Key: "label", Value: "team=infra"}, {Key: "add-host", Value: "db:10.1.2.3"},
		{Key: "sysctl", Value: "net.core.somaxconn=1024"}, {Key: "cpuset-cpus", Value: "0"},
	}
	mustStart(t, d, task)
	c := rawInspect(t, task.ID)
	hc := c.HostConfig
	if hc.CPUShares != 512 || hc.CPUQuota != 150000 || hc.CPUPeriod != 100000 || hc.Memory != 64<<20 || hc.MemorySwap != 64<<20 {
		t.Errorf("resources: shares %d quota %d period %d memory %d swap %d", hc.CPUShares, hc.CPUQuota, hc.CPUPeriod, hc.Memory, hc.MemorySwap)
	}
	if hc.ShmSize != 32<<20 || len(hc.Ulimits) != 1 || hc.Ulimits[0].Soft != 1024 || hc.Ulimits[0].Hard != 2048 ||
		len(hc.CapAdd) != 1 || *hc.PidsLimit != 100 || hc.ExtraHosts[0] != "db:10.1.2.3" || hc.CpusetCpus != "0" {
		t.Errorf("parameters: %+v", hc)
	}
	if c.Config.Labels["team"] != "infra" || c.Config.Labels[LabelID] != task.ID || c.Config.Labels[LabelCPUSet] != "0" ||
		c.Config.Labels[driver.LabelTask] != "res" || c.Config.WorkingDir != "/tmp" {
		t.Errorf("config: %+v", c.Config)
	}
	r, err := d.Exec(ctxT(t, 10*time.Second), task.ID, "cat /proc/sys/net/core/somaxconn; pwd")
	if err != nil || r.ExitCode != 0 || string(r.Output) != "1024\n/tmp\n" {
		t.Errorf("in the container: %q %v", r.Output, err)
	}
}

func TestCPUSet(t *testing.T) {
	d := parallelDriver(t)
	// Other packages' tests bind CPUs on the same daemon; this test counts only its own.
	d.cpusetLabel = LabelCPUSet + "." + strings.ToLower(t.Name()) + "." + itoa(os.Getpid())
	nodes, err := cpubind.ReadTopology("/sys")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range nodes {
		total += len(n.CPUs)
	}
	big := newTask(t, d, "big", imgPlain, "/bin/sleep", "30")
	big.CPURequest = float64(total + 1)
	big.Container.Parameters = []v4.Parameter{{Key: "cpuset", Value: "true"}}
	_, err = d.Start(ctxT(t, 20*time.Second), big)
	want := "cpuset: " + itoa(total+1) + " cpus requested, the machine has " + itoa(total)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("too large: %v, want %q", err, want)
	}

	// Bind one CPU at a time until the machine has none left (at most 4 tries).
	var bound []string
	for i := range min(total, 4) {
		task := newTask(t, d, "bind"+itoa(i), imgPlain, "/bin/sleep", "30")
		task.CPURequest = 0.3 // ceil: one CPU
		task.Container.Parameters = []v4.Parameter{{Key: "cpuset", Value: "true"}}
		mustStart(t, d, task)
		cpus := rawInspect(t, task.ID).HostConfig.CpusetCpus
		for _, b := range bound {
			if b == cpus {
				t.Fatalf("cpu %s bound twice", cpus)
			}
		}
		bound = append(bound, cpus)
	}
	if total <= 4 {
		extra := newTask(t, d, "extra", imgPlain, "/bin/sleep", "30")
		extra.Container.Parameters = []v4.Parameter{{Key: "cpuset", Value: "true"}}
		if _, err := d.Start(ctxT(t, 20*time.Second), extra); err == nil || !strings.Contains(err.Error(), "cpuset: 1 cpus requested") {
			t.Fatalf("all cpus bound: %v", err)
		}
	}
}

func TestOOMKilled(t *testing.T) {
	d := parallelDriver(t)
	task := newTask(t, d, "oom", imgPlain, "/bin/sh", "-c", "sleep 0.3; busybox dd if=/dev/zero of=/dev/null bs=64M count=1")
	task.MemoryLimit = 8
	mustStart(t, d, task)
	st := drivertest.WaitEnded(t, d, task.ID, 20*time.Second) // Inspect waits for a late OOM flag
	if !st.Info.OOMKilled || st.Info.ExitCode != 137 || st.Info.Status != "exited" || st.Info.FinishAt.IsZero() {
		t.Fatalf("want OOM kill: %+v", st.Info)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
