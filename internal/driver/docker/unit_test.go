package docker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

func TestCommandLine(t *testing.T) {
	ep := []string{"/bin/sh", "-c"}
	cases := []struct {
		name          string
		entry         []string
		cmd           string
		args          []string
		wantEP, wantC []string
		wantErr       string
	}{
		{"entrypoint, command replaces it", ep, "/bin/echo", []string{"a"}, []string{"/bin/echo"}, []string{"a"}, ""},
		{"entrypoint, args go to it", ep, "", []string{"echo hi"}, nil, []string{"echo hi"}, ""},
		{"entrypoint, nothing: image's own", ep, "", nil, nil, nil, ""},
		{"no entrypoint, command + args as CMD", nil, "/bin/sh", []string{"-c", "x"}, nil, []string{"/bin/sh", "-c", "x"}, ""},
		{"no entrypoint, no command", nil, "", []string{"x"}, nil, nil, "has no entrypoint and the task has no command"},
	}
	for _, c := range cases {
		e, cmd, err := commandLine("img", c.entry, c.cmd, c.args)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), "img") {
				t.Errorf("%s: err %v, want %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(e, c.wantEP) || !slices.Equal(cmd, c.wantC) {
			t.Errorf("%s: got %q %q %v, want %q %q", c.name, e, cmd, err, c.wantEP, c.wantC)
		}
	}
}

func TestApplyParameters(t *testing.T) {
	params := []v4.Parameter{
		{Key: "net", Value: "mynet"}, {Key: "ip", Value: "10.1.0.5"}, {Key: "P", Value: "true"},
		{Key: "oom-kill-disable", Value: "true"}, {Key: "rm", Value: "false"},
		{Key: "ulimit", Value: "nofile=1024"}, {Key: "ulimit", Value: "nproc=10:20"},
		{Key: "shm-size", Value: "64"}, {Key: "ipc", Value: "host"}, {Key: "memory-swap", Value: "-1"},
		{Key: "memory-swappiness", Value: "0"}, {Key: "cpuset", Value: "true"},
		{Key: "device-read-bps", Value: "/dev/sda:1mb"}, {Key: "device-write-iops", Value: "/dev/sda:100"},
		{Key: "--cap-add", Value: "NET_ADMIN,SYS_PTRACE"}, {Key: "label", Value: "team=a"},
		{Key: "log-opt", Value: "max-size=10m"}, {Key: "sysctl", Value: "net.core.somaxconn=1024"},
		{Key: "tmpfs", Value: "/scratch:size=1m"}, {Key: "device", Value: "/dev/fuse"},
		{Key: "user", Value: "nobody"}, {Key: "stop-signal", Value: "SIGINT"}, {Key: "init", Value: ""},
		{Key: "no-such-option", Value: "x"},
	}
	cfg, hc := &container.Config{}, &container.HostConfig{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	x, err := applyParameters(params, nil, cfg, hc, log)
	if err != nil {
		t.Fatal(err)
	}
	if x.net != "mynet" || x.ip != "10.1.0.5" || !x.cpusetBind || x.memorySwap == nil || *x.memorySwap != -1 {
		t.Errorf("extras: %+v", x)
	}
	if !hc.PublishAllPorts || !*hc.OomKillDisable || len(hc.Ulimits) != 2 || hc.Ulimits[1].Hard != 20 || hc.Ulimits[0].Hard != 1024 {
		t.Errorf("hostconfig: %+v", hc)
	}
	if hc.ShmSize != 64<<20 || hc.IpcMode != "host" || *hc.MemorySwappiness != 0 || hc.BlkioDeviceReadBps[0].Rate != 1<<20 ||
		hc.BlkioDeviceWriteIOps[0].Rate != 100 || len(hc.CapAdd) != 2 || hc.Sysctls["net.core.somaxconn"] != "1024" ||
		hc.Tmpfs["/scratch"] != "size=1m" || hc.Devices[0].PathInContainer != "/dev/fuse" || !*hc.Init {
		t.Errorf("hostconfig: %+v", hc)
	}
	if cfg.Labels["team"] != "a" || cfg.User != "nobody" || cfg.StopSignal != "SIGINT" || hc.LogConfig.Config["max-size"] != "10m" {
		t.Errorf("config: %+v", cfg)
	}
	for _, bad := range []v4.Parameter{
		{Key: "ulimit", Value: "nofile"}, {Key: "shm-size", Value: "lots"}, {Key: "memory-swappiness", Value: "101"},
		{Key: "device-read-bps", Value: "sda:1mb"}, {Key: "label", Value: "berth.task=x"}, {Key: "oom-kill-disable", Value: "maybe"},
	} {
		_, err := applyParameters([]v4.Parameter{bad}, nil, &container.Config{}, &container.HostConfig{}, log)
		if err == nil || !strings.Contains(err.Error(), bad.Key) {
			t.Errorf("%s=%s: %v", bad.Key, bad.Value, err)
		}
	}
}

func TestApplyResources(t *testing.T) {
	for _, c := range []struct {
		name string
		task driver.Task
		want container.HostConfig
	}{
		{"request and limits", driver.Task{CPURequest: 0.5, CPULimit: 1.5, MemoryLimit: 64},
			container.HostConfig{Resources: container.Resources{CPUShares: 512, CPUPeriod: 100000, CPUQuota: 150000, Memory: 64 << 20, MemorySwap: 64 << 20}}},
		{"defaults", driver.Task{}, container.HostConfig{Resources: container.Resources{CPUShares: 1024}}},
		// A limit below Docker's minimum is passed on for Docker to refuse, never dropped.
		{"a 3 MB limit", driver.Task{MemoryLimit: 3}, container.HostConfig{Resources: container.Resources{CPUShares: 1024, Memory: 3 << 20, MemorySwap: 3 << 20}}},
		// A revocable task weighs the least whatever it asks, and keeps its cpu limit.
		{"revocable with a request", driver.Task{Revocable: true, CPURequest: 2, CPULimit: 1},
			container.HostConfig{Resources: container.Resources{CPUShares: 2, CPUPeriod: 100000, CPUQuota: 100000}}},
		{"revocable without a request", driver.Task{Revocable: true}, container.HostConfig{Resources: container.Resources{CPUShares: 2}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.task.Setup = &driver.ContainerSetup{}
			hc := &container.HostConfig{}
			applyResources(&c.task, hc)
			if !reflect.DeepEqual(hc.Resources, c.want.Resources) {
				t.Fatalf("resources %+v, want %+v", hc.Resources, c.want.Resources)
			}
		})
	}
}

// TestUnreachable needs no daemon: every call names the address it could not reach.
func TestUnreachable(t *testing.T) {
	d, err := New(Config{Host: "unix:///nonexistent/docker.sock", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	task := &driver.Task{ID: "ns.tg.c", Container: &v4.Container{Image: "x"}}
	_, err1 := d.Start(ctx, task)
	_, err2 := d.Inspect(ctx, "ns.tg.c")
	_, err3 := d.List(ctx)
	err4 := d.Stop(ctx, "ns.tg.c", 0)
	_, _, err5 := d.SetupPod(ctx, "ns.tg", nil, nil)
	for i, err := range []error{err1, err2, err3, err4, err5} {
		if err == nil || !strings.Contains(err.Error(), "docker daemon unreachable at unix:///nonexistent/docker.sock: ") {
			t.Errorf("call %d: %v", i+1, err)
		}
		if errors.Is(err, driver.ErrNotFound) {
			t.Errorf("call %d: unreachable reported as not found", i+1)
		}
	}
}

func TestEndpointConfig(t *testing.T) {
	mac, _ := net.ParseMAC("02:42:ac:11:00:09")
	nc, err := endpointConfig("mynet", true, paramExtras{ip: "10.1.0.5", mac: mac})
	if err != nil {
		t.Fatal(err)
	}
	ep := nc.EndpointsConfig["mynet"]
	if ep == nil || ep.IPAMConfig.IPv4Address.String() != "10.1.0.5" || ep.MacAddress.String() != "02:42:ac:11:00:09" {
		t.Errorf("user network: %+v", nc.EndpointsConfig)
	}
	if nc, err := endpointConfig("bridge", false, paramExtras{mac: mac}); err != nil || nc.EndpointsConfig["bridge"].MacAddress.String() != "02:42:ac:11:00:09" {
		t.Errorf("bridge with a MAC: %+v %v", nc, err)
	}
	if nc, err := endpointConfig("bridge", false, paramExtras{}); nc != nil || err != nil {
		t.Errorf("neither: %+v %v", nc, err)
	}
	if nc, err := endpointConfig("none", false, paramExtras{mac: mac}); nc != nil || err != nil {
		t.Errorf("a MAC without a network: %+v %v", nc, err)
	}
	for _, bad := range []struct {
		mode string
		user bool
		x    paramExtras
		want string
	}{
		{"bridge", false, paramExtras{ip: "10.1.0.5"}, "parameter ip=10.1.0.5 needs a user network, not bridge"},
		{"mynet", true, paramExtras{ip: "10.1.0"}, "parameter ip=10.1.0:"},
		{"host", false, paramExtras{mac: mac}, "conflicting options: mac-address and the network mode"},
		{"none", false, paramExtras{ip: "10.1.0.5", mac: mac}, "parameter ip=10.1.0.5 needs a user network, not none"},
		{"mynet", true, paramExtras{ip: "fe80::1%eth0"}, "give an IPv4 address"},
		{"mynet", true, paramExtras{ip: "2001:db8::5"}, "give an IPv4 address"},
	} {
		if _, err := endpointConfig(bad.mode, bad.user, bad.x); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s %+v: %v, want %q", bad.mode, bad.x, err, bad.want)
		}
	}
	// A tenant's MAC and resolvers: one unicast Ethernet address, no scoped resolvers.
	for _, p := range []v4.Parameter{
		{Key: "mac-address", Value: "02:42"},
		{Key: "mac-address", Value: "01:00:5e:00:00:01"},
		{Key: "mac-address", Value: "02:42:ac:11:00:09:00:01"},
		{Key: "dns", Value: "fe80::1%eth0"},
	} {
		if _, err := applyParameters([]v4.Parameter{p}, nil, &container.Config{}, &container.HostConfig{}, slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil || !strings.Contains(err.Error(), p.Key) {
			t.Errorf("%s=%s: %v, want an error naming it", p.Key, p.Value, err)
		}
	}
}

// The sandbox image's entrypoint reaches docker import as a Dockerfile exec form.
func TestSandboxEntrypointChange(t *testing.T) {
	if got := entrypointChange(); got != `ENTRYPOINT ["/bin/sleep","2147483647"]` {
		t.Errorf("entrypointChange() = %s", got)
	}
}
