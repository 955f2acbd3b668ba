package containerd

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/containerd/containerd/v2/pkg/oci"
	units "github.com/docker/go-units"
	"github.com/moby/sys/signal"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/cpubind"
	"github.com/berthhq/berth/internal/driver/params"
)

// A container's docker parameters (BCS's `parameters: [{key, value}]`) mean here what
// they mean to the Docker driver (internal/driver/docker/params.go): each one with an
// OCI meaning becomes that part of the spec; every other one fails the start, so no
// parameter is ever silently dropped (docs/runtimes.md). Whether the spec may use a
// parameter at all was judged at admission (internal/acl).

// paramSet is what a task's parameters make of its spec: options applied in order
// after the driver's own, and what the driver resolves beside them.
type paramSet struct {
	opts []oci.SpecOpts
	// cpu is the CPU binding asked for (cpuset, cpuset-cpus, cpuset-mems).
	cpu cpubind.Request
	// devices are device parameters' nodes, given as Setup.Devices are.
	devices []driver.Device
	// dns is the resolver the parameters ask for (dns, dns-search, dns-option).
	dns driver.DNS
	// hosts are add-host's lines of /etc/hosts.
	hosts []string
	// capAdd and capDrop are applied after every other option, dropped first (caps.go).
	capAdd, capDrop []string
	// groups are group-add's, applied after the user (which resets them).
	groups []string
	labels map[string]string
	// unconfined is seccomp=unconfined: no seccomp profile.
	unconfined bool
}

// paramFunc applies one parameter's value.
type paramFunc func(v string, p *paramSet) error

// paramTable maps a docker run option (without dashes) to its OCI meaning. Options that
// can repeat (ulimit, cap-add, dns, label, ...) accumulate.
var paramTable = map[string]paramFunc{
	"cpuset": func(v string, p *paramSet) error {
		b, err := params.Bool(v)
		p.cpu.Bind = b
		return err
	},
	"cpuset-cpus": cpuList(func(p *paramSet) *string { return &p.cpu.CPUs }),
	"cpuset-mems": cpuList(func(p *paramSet) *string { return &p.cpu.Mems }),
	"ulimit":      ulimit,
	"shm-size": func(v string, p *paramSet) error {
		n, err := params.MB(v, false)
		if err == nil && n < 1024 {
			err = fmt.Errorf("at least 1k")
		}
		p.opts = append(p.opts, withShmSize(n/1024))
		return err
	},
	"memory-swap": func(v string, p *paramSet) error {
		n, err := params.MB(v, true)
		p.opts = append(p.opts, withMemorySwap(n))
		return err
	},
	"memory-reservation": func(v string, p *paramSet) error {
		n, err := params.MB(v, false)
		p.opts = append(p.opts, withResources(func(r *specs.LinuxResources) { memory(r).Reservation = &n }))
		return err
	},
	"memory-swappiness": func(v string, p *paramSet) error {
		n, err := params.IntRange(v, 0, 100)
		u := uint64(n)
		p.opts = append(p.opts, withResources(func(r *specs.LinuxResources) { memory(r).Swappiness = &u }))
		return err
	},
	"oom-kill-disable": func(v string, p *paramSet) error {
		b, err := params.Bool(v)
		p.opts = append(p.opts, withResources(func(r *specs.LinuxResources) { memory(r).DisableOOMKiller = &b }))
		return err
	},
	"pids-limit": func(v string, p *paramSet) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if n > 0 { // 0 and -1 are unlimited, as in docker run
			p.opts = append(p.opts, oci.WithPidsLimit(n))
		}
		return err
	},
	"blkio-weight": func(v string, p *paramSet) error {
		n, err := params.IntRange(v, 10, 1000)
		w := uint16(n)
		p.opts = append(p.opts, withResources(func(r *specs.LinuxResources) {
			if r.BlockIO == nil {
				r.BlockIO = &specs.LinuxBlockIO{}
			}
			r.BlockIO.Weight = &w
		}))
		return err
	},
	"oom-score-adj": func(v string, p *paramSet) error {
		n, err := params.IntRange(v, -1000, 1000)
		adj := int(n)
		p.opts = append(p.opts, withProcess(func(pr *specs.Process) { pr.OOMScoreAdj = &adj }))
		return err
	},
	"read-only": func(v string, p *paramSet) error {
		b, err := params.Bool(v)
		if b {
			p.opts = append(p.opts, oci.WithRootFSReadonly())
		}
		return err
	},
	"tmpfs":        tmpfs,
	"user":         user,
	"env":          env,
	"workdir":      workdir,
	"hostname":     hostname,
	"security-opt": securityOpt,
	"label":        label,
	"add-host":     addHost,
	"dns": func(v string, p *paramSet) error {
		servers, err := params.Addrs(params.List(v))
		for _, s := range servers {
			p.dns.Servers = append(p.dns.Servers, s.String())
		}
		return err
	},
	"dns-search": func(v string, p *paramSet) error { return resolverWords(&p.dns.Search, params.List(v)) },
	"dns-option": func(v string, p *paramSet) error { return resolverWords(&p.dns.Options, []string{v}) },
	"cap-add":    capList(func(p *paramSet) *[]string { return &p.capAdd }),
	"cap-drop":   capList(func(p *paramSet) *[]string { return &p.capDrop }),
	"group-add": func(v string, p *paramSet) error {
		p.groups = append(p.groups, params.List(v)...)
		return nil
	},
	"sysctl": sysctl,
	"device": func(v string, p *paramSet) error {
		dv, err := params.Device(v)
		p.devices = append(p.devices, dv)
		return err
	},
	"stop-signal": func(v string, p *paramSet) error {
		sig, err := signal.ParseSignal(v)
		if err != nil {
			return err
		}
		p.opts = append(p.opts, withContainerLabel(stopSignalLabel, strconv.Itoa(int(sig))))
		return nil
	},
	"ipc": hostNamespace(specs.IPCNamespace),
	"uts": hostNamespace(specs.UTSNamespace),
	"pid": hostNamespace(specs.PIDNamespace),
	// net names the pod's network mode, which the executor has made Setup.NetworkMode
	// (networkOpts refuses the modes the driver has no network for).
	"net":     func(string, *paramSet) error { return nil },
	"network": func(string, *paramSet) error { return nil },
	// rm is BCS's AutoRemove; berth removes containers itself once it has their info.
	"rm": func(string, *paramSet) error { return nil },
}

// parseParameters applies a container's docker parameters (keys may carry their
// dashes). A bad value is an error naming the parameter; one without an OCI meaning is
// refused: it would mean something under the Docker driver that it cannot mean here.
func parseParameters(list []v4.Parameter) (paramSet, error) {
	var p paramSet
	for _, prm := range list {
		key := params.Key(prm.Key)
		f, ok := paramTable[key]
		if !ok {
			return p, fmt.Errorf("parameter %s: not supported by the containerd driver", key)
		}
		if err := f(strings.TrimSpace(prm.Value), &p); err != nil {
			return p, fmt.Errorf("parameter %s=%q: %w", key, prm.Value, err)
		}
	}
	return p, nil
}

// cpuList is a parameter holding a CPU or memory node list, checked here.
func cpuList(field func(p *paramSet) *string) paramFunc {
	return func(v string, p *paramSet) error {
		if _, err := cpubind.ParseList(v); err != nil {
			return err
		}
		*field(p) = v
		return nil
	}
}

// capList is cap-add or cap-drop: capability names with or without CAP_, or ALL.
func capList(field func(p *paramSet) *[]string) paramFunc {
	return func(v string, p *paramSet) error {
		for _, c := range params.List(v) {
			name, err := capName(c)
			if err != nil {
				return err
			}
			*field(p) = append(*field(p), name)
		}
		return nil
	}
}

// ulimit is name=soft[:hard], a limit of -1 unlimited, as docker run reads it.
func ulimit(v string, p *paramSet) error {
	u, err := units.ParseUlimit(v)
	if err != nil {
		return err
	}
	p.opts = append(p.opts, oci.WithRlimit(&specs.POSIXRlimit{
		Type: "RLIMIT_" + strings.ToUpper(u.Name), Soft: uint64(u.Soft), Hard: uint64(u.Hard),
	}))
	return nil
}

// workdir is the working directory, absolute.
func workdir(v string, p *paramSet) error {
	if !path.IsAbs(v) {
		return fmt.Errorf("must be an absolute path")
	}
	p.opts = append(p.opts, oci.WithProcessCwd(path.Clean(v)))
	return nil
}

// hostNamespace is ipc, uts or pid: "host" shares the node's namespace (admission
// judged it); the container's own ("private", or docker's "shareable" for ipc) changes
// nothing; joining another container's is not supported.
func hostNamespace(ns specs.LinuxNamespaceType) paramFunc {
	return func(v string, p *paramSet) error {
		switch strings.ToLower(v) {
		case "host":
			p.opts = append(p.opts, oci.WithHostNamespace(ns))
			if ns == specs.IPCNamespace {
				p.opts = append(p.opts, withHostShm)
			}
			return nil
		case "", "private", "shareable":
			return nil
		}
		return fmt.Errorf("not supported by the containerd driver (host or private)")
	}
}
