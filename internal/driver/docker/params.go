package docker

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"

	units "github.com/docker/go-units"
	"github.com/moby/moby/api/types/container"

	v4 "github.com/berthhq/berth/api/v4"
)

// paramExtras are the parameters that are not plain container settings: they are
// resolved by Start against the network and the CPU topology.
type paramExtras struct {
	net        string           // user network (USER mode)
	ip         string           // static IP on that network
	mac        net.HardwareAddr // MAC address on the container's network
	cpusetBind bool             // "cpuset=true": bind ceil(cpu request) CPUs
	cpusetCPUs string           // explicit cpuset-cpus
	cpusetMems string           // explicit cpuset-mems
	// memorySwap is applied after the memory limit, which otherwise sets swap = memory.
	memorySwap *int64
}

// paramFunc applies one parameter's value.
type paramFunc func(v string, cfg *container.Config, hc *container.HostConfig, x *paramExtras) error

// paramTable maps a docker run option (without dashes) to how it is applied. Options
// that can repeat (ulimit, cap-add, dns, label, ...) accumulate.
var paramTable = map[string]paramFunc{
	"net": func(v string, _ *container.Config, _ *container.HostConfig, x *paramExtras) error {
		x.net = v
		return nil
	},
	"network": func(v string, _ *container.Config, _ *container.HostConfig, x *paramExtras) error {
		x.net = v
		return nil
	},
	"ip": func(v string, _ *container.Config, _ *container.HostConfig, x *paramExtras) error {
		x.ip = v
		return nil
	},
	"cpuset": func(v string, _ *container.Config, _ *container.HostConfig, x *paramExtras) error {
		b, err := parseBool(v)
		x.cpusetBind = b
		return err
	},
	"cpuset-cpus": func(v string, _ *container.Config, _ *container.HostConfig, x *paramExtras) error {
		x.cpusetCPUs = v
		return nil
	},
	"cpuset-mems": func(v string, _ *container.Config, _ *container.HostConfig, x *paramExtras) error {
		x.cpusetMems = v
		return nil
	},
	"memory-swap": func(v string, _ *container.Config, _ *container.HostConfig, x *paramExtras) error {
		n, err := parseMB(v, true)
		x.memorySwap = &n
		return err
	},
	// rm is BCS's AutoRemove; berth removes containers itself once it has their info.
	"rm": func(string, *container.Config, *container.HostConfig, *paramExtras) error { return nil },

	"P": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		b, err := parseBool(v)
		hc.PublishAllPorts = b
		return err
	},
	"oom-kill-disable": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		b, err := parseBool(v)
		hc.OomKillDisable = &b
		return err
	},
	"ulimit": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		u, err := units.ParseUlimit(v)
		if err != nil {
			return err
		}
		hc.Ulimits = append(hc.Ulimits, u)
		return nil
	},
	"shm-size": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		n, err := parseMB(v, false)
		hc.ShmSize = n
		return err
	},
	"memory-reservation": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		n, err := parseMB(v, false)
		hc.MemoryReservation = n
		return err
	},
	"memory-swappiness": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		n, err := parseIntRange(v, 0, 100)
		hc.MemorySwappiness = &n
		return err
	},
	"pids-limit": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		n, err := strconv.ParseInt(v, 10, 64)
		hc.PidsLimit = &n
		return err
	},
	"blkio-weight": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		n, err := parseIntRange(v, 10, 1000)
		hc.BlkioWeight = uint16(n)
		return err
	},
	"oom-score-adj": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		n, err := parseIntRange(v, -1000, 1000)
		hc.OomScoreAdj = int(n)
		return err
	},
	"cpu-rt-runtime": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		n, err := strconv.ParseInt(v, 10, 64)
		hc.CPURealtimeRuntime = n
		return err
	},
	"device-read-bps":   throttle(func(hc *container.HostConfig) *throttles { return &hc.BlkioDeviceReadBps }, true),
	"device-write-bps":  throttle(func(hc *container.HostConfig) *throttles { return &hc.BlkioDeviceWriteBps }, true),
	"device-read-iops":  throttle(func(hc *container.HostConfig) *throttles { return &hc.BlkioDeviceReadIOps }, false),
	"device-write-iops": throttle(func(hc *container.HostConfig) *throttles { return &hc.BlkioDeviceWriteIOps }, false),
	"device": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		m, err := parseDevice(v)
		hc.Devices = append(hc.Devices, m)
		return err
	},
	"cap-add": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		hc.CapAdd = append(hc.CapAdd, splitList(v)...)
		return nil
	},
	"cap-drop": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		hc.CapDrop = append(hc.CapDrop, splitList(v)...)
		return nil
	},
	"dns": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		servers, err := parseAddrs(splitList(v))
		hc.DNS = append(hc.DNS, servers...)
		return err
	},
	"dns-search": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		hc.DNSSearch = append(hc.DNSSearch, splitList(v)...)
		return nil
	},
	"dns-option": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		hc.DNSOptions = append(hc.DNSOptions, v)
		return nil
	},
	"add-host": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		host, ip, ok := strings.Cut(v, ":")
		if !ok || host == "" || ip == "" {
			return fmt.Errorf("want host:ip")
		}
		hc.ExtraHosts = append(hc.ExtraHosts, v)
		return nil
	},
	"group-add": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		hc.GroupAdd = append(hc.GroupAdd, splitList(v)...)
		return nil
	},
	"security-opt": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		hc.SecurityOpt = append(hc.SecurityOpt, v)
		return nil
	},
	"sysctl": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		return setKV(&hc.Sysctls, v)
	},
	"tmpfs": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		path, opts, _ := strings.Cut(v, ":")
		if !strings.HasPrefix(path, "/") {
			return fmt.Errorf("want an absolute path[:options]")
		}
		if hc.Tmpfs == nil {
			hc.Tmpfs = map[string]string{}
		}
		hc.Tmpfs[path] = opts
		return nil
	},
	"log-driver": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		hc.LogConfig.Type = v
		return nil
	},
	"log-opt": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		return setKV(&hc.LogConfig.Config, v)
	},
	"init": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		b, err := parseBool(v)
		hc.Init = &b
		return err
	},
	"read-only": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		b, err := parseBool(v)
		hc.ReadonlyRootfs = b
		return err
	},
	"ipc":           mode(func(hc *container.HostConfig, v string) { hc.IpcMode = container.IpcMode(v) }),
	"uts":           mode(func(hc *container.HostConfig, v string) { hc.UTSMode = container.UTSMode(v) }),
	"pid":           mode(func(hc *container.HostConfig, v string) { hc.PidMode = container.PidMode(v) }),
	"userns":        mode(func(hc *container.HostConfig, v string) { hc.UsernsMode = container.UsernsMode(v) }),
	"cgroupns":      mode(func(hc *container.HostConfig, v string) { hc.CgroupnsMode = container.CgroupnsMode(v) }),
	"cgroup-parent": mode(func(hc *container.HostConfig, v string) { hc.CgroupParent = v }),
	"user": func(v string, cfg *container.Config, _ *container.HostConfig, _ *paramExtras) error {
		cfg.User = v
		return nil
	},
	"stop-signal": func(v string, cfg *container.Config, _ *container.HostConfig, _ *paramExtras) error {
		cfg.StopSignal = v
		return nil
	},
	"mac-address": func(v string, _ *container.Config, _ *container.HostConfig, x *paramExtras) error {
		mac, err := net.ParseMAC(v)
		if err != nil {
			return err
		}
		if len(mac) != 6 || mac[0]&1 != 0 { // one Ethernet interface's: 48 bits, unicast
			return fmt.Errorf("%s: give a unicast 48-bit Ethernet address", v)
		}
		x.mac = mac
		return nil
	},
	"label": func(v string, cfg *container.Config, _ *container.HostConfig, _ *paramExtras) error {
		k, _, _ := strings.Cut(v, "=")
		if strings.HasPrefix(k, "berth.") {
			return fmt.Errorf("labels berth.* belong to berth")
		}
		return setKV(&cfg.Labels, v)
	},
}

// applyParameters applies the container spec's docker parameters (docs/docker.md, Start;
// keys may carry their dashes), a seccomp profile's name resolved from the node's profiles.
// A bad value is an error naming the parameter; an unknown key is logged and ignored,
// as BCS does (the node's guard runs such a spec only with --allow-privileged).
func applyParameters(params []v4.Parameter, profiles map[string]string, cfg *container.Config, hc *container.HostConfig, log *slog.Logger) (paramExtras, error) {
	var x paramExtras
	for _, p := range params {
		key := strings.TrimLeft(p.Key, "-")
		f, ok := paramTable[key]
		if !ok {
			log.Warn("unknown docker parameter ignored", "key", p.Key, "value", p.Value)
			continue
		}
		v := strings.TrimSpace(p.Value)
		if key == "security-opt" {
			var keep bool
			var err error
			if v, keep, err = resolveSeccomp(v, profiles); err != nil {
				return x, fmt.Errorf("parameter %s=%q: %w", key, p.Value, err)
			}
			if !keep {
				continue
			}
		}
		if err := f(v, cfg, hc, &x); err != nil {
			return x, fmt.Errorf("parameter %s=%q: %w", key, p.Value, err)
		}
	}
	return x, nil
}

// mode is a parameter that sets a namespace or cgroup mode string as given.
func mode(set func(hc *container.HostConfig, v string)) paramFunc {
	return func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		set(hc, v)
		return nil
	}
}
