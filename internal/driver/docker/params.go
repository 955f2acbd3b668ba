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
	"github.com/berthhq/berth/internal/driver/params"
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
	"net":     extra(func(x *paramExtras) *string { return &x.net }),
	"network": extra(func(x *paramExtras) *string { return &x.net }),
	"ip":      extra(func(x *paramExtras) *string { return &x.ip }),
	"cpuset": func(v string, _ *container.Config, _ *container.HostConfig, x *paramExtras) error {
		b, err := params.Bool(v)
		x.cpusetBind = b
		return err
	},
	"cpuset-cpus": extra(func(x *paramExtras) *string { return &x.cpusetCPUs }),
	"cpuset-mems": extra(func(x *paramExtras) *string { return &x.cpusetMems }),
	"memory-swap": func(v string, _ *container.Config, _ *container.HostConfig, x *paramExtras) error {
		n, err := params.MB(v, true)
		x.memorySwap = &n
		return err
	},
	// rm is BCS's AutoRemove; berth removes containers itself once it has their info.
	"rm": func(string, *container.Config, *container.HostConfig, *paramExtras) error { return nil },

	"P":                flag(func(hc *container.HostConfig) *bool { return &hc.PublishAllPorts }),
	"oom-kill-disable": optionalFlag(func(hc *container.HostConfig) **bool { return &hc.OomKillDisable }),
	"ulimit": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		u, err := units.ParseUlimit(v)
		if err != nil {
			return err
		}
		hc.Ulimits = append(hc.Ulimits, u)
		return nil
	},
	"shm-size": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		n, err := params.MB(v, false)
		hc.ShmSize = n
		return err
	},
	"memory-reservation": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		n, err := params.MB(v, false)
		hc.MemoryReservation = n
		return err
	},
	"memory-swappiness": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		n, err := params.IntRange(v, 0, 100)
		hc.MemorySwappiness = &n
		return err
	},
	"pids-limit": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		n, err := strconv.ParseInt(v, 10, 64)
		hc.PidsLimit = &n
		return err
	},
	"blkio-weight": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		n, err := params.IntRange(v, 10, 1000)
		hc.BlkioWeight = uint16(n)
		return err
	},
	"oom-score-adj": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		n, err := params.IntRange(v, -1000, 1000)
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
		m, err := params.Device(v)
		hc.Devices = append(hc.Devices, container.DeviceMapping{PathOnHost: m.HostPath, PathInContainer: m.ContainerPath, CgroupPermissions: m.Permissions})
		return err
	},
	"cap-add":  list(func(hc *container.HostConfig) *[]string { return &hc.CapAdd }),
	"cap-drop": list(func(hc *container.HostConfig) *[]string { return &hc.CapDrop }),
	"dns": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		servers, err := params.Addrs(params.List(v))
		hc.DNS = append(hc.DNS, servers...)
		return err
	},
	"dns-search": list(func(hc *container.HostConfig) *[]string { return &hc.DNSSearch }),
	"dns-option": each(func(hc *container.HostConfig) *[]string { return &hc.DNSOptions }),
	"add-host": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		host, ip, ok := strings.Cut(v, ":")
		if !ok || host == "" || ip == "" {
			return fmt.Errorf("want host:ip")
		}
		hc.ExtraHosts = append(hc.ExtraHosts, v)
		return nil
	},
	"group-add":    list(func(hc *container.HostConfig) *[]string { return &hc.GroupAdd }),
	"security-opt": each(func(hc *container.HostConfig) *[]string { return &hc.SecurityOpt }),
	"sysctl": func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		return params.SetKV(&hc.Sysctls, v)
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
		return params.SetKV(&hc.LogConfig.Config, v)
	},
	"init":          optionalFlag(func(hc *container.HostConfig) **bool { return &hc.Init }),
	"read-only":     flag(func(hc *container.HostConfig) *bool { return &hc.ReadonlyRootfs }),
	"ipc":           mode(func(hc *container.HostConfig, v string) { hc.IpcMode = container.IpcMode(v) }),
	"uts":           mode(func(hc *container.HostConfig, v string) { hc.UTSMode = container.UTSMode(v) }),
	"pid":           mode(func(hc *container.HostConfig, v string) { hc.PidMode = container.PidMode(v) }),
	"userns":        mode(func(hc *container.HostConfig, v string) { hc.UsernsMode = container.UsernsMode(v) }),
	"cgroupns":      mode(func(hc *container.HostConfig, v string) { hc.CgroupnsMode = container.CgroupnsMode(v) }),
	"cgroup-parent": mode(func(hc *container.HostConfig, v string) { hc.CgroupParent = v }),
	"user":          setting(func(cfg *container.Config) *string { return &cfg.User }),
	"stop-signal":   setting(func(cfg *container.Config) *string { return &cfg.StopSignal }),
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
		if params.ReservedLabel(k) {
			return fmt.Errorf("labels berth.* belong to berth")
		}
		return params.SetKV(&cfg.Labels, v)
	},
}

// applyParameters applies the container spec's docker parameters (docs/docker.md, Start;
// keys may carry their dashes), a seccomp profile's name resolved from the node's profiles.
// A bad value is an error naming the parameter; an unknown key is logged and ignored,
// as BCS does (the node's guard runs such a spec only with --allow-privileged).
func applyParameters(list []v4.Parameter, profiles map[string]string, cfg *container.Config, hc *container.HostConfig, log *slog.Logger) (paramExtras, error) {
	var x paramExtras
	for _, p := range list {
		key := params.Key(p.Key)
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

// extra is a parameter kept as given for Start to resolve (paramExtras).
func extra(field func(x *paramExtras) *string) paramFunc {
	return func(v string, _ *container.Config, _ *container.HostConfig, x *paramExtras) error {
		*field(x) = v
		return nil
	}
}

// setting is a parameter that sets a container setting as given.
func setting(field func(cfg *container.Config) *string) paramFunc {
	return func(v string, cfg *container.Config, _ *container.HostConfig, _ *paramExtras) error {
		*field(cfg) = v
		return nil
	}
}

// flag is a boolean parameter (parseBool) of a host setting.
func flag(field func(hc *container.HostConfig) *bool) paramFunc {
	return func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		b, err := params.Bool(v)
		*field(hc) = b
		return err
	}
}

// optionalFlag is flag for a host setting that docker leaves unset when not given.
func optionalFlag(field func(hc *container.HostConfig) **bool) paramFunc {
	return func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		b, err := params.Bool(v)
		*field(hc) = &b
		return err
	}
}

// list is a repeatable parameter whose value is a comma-separated list (splitList),
// each item appended to a host setting.
func list(field func(hc *container.HostConfig) *[]string) paramFunc {
	return func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		f := field(hc)
		*f = append(*f, params.List(v)...)
		return nil
	}
}

// each is a repeatable parameter whose value, whole, is appended to a host setting.
func each(field func(hc *container.HostConfig) *[]string) paramFunc {
	return func(v string, _ *container.Config, hc *container.HostConfig, _ *paramExtras) error {
		f := field(hc)
		*f = append(*f, v)
		return nil
	}
}
