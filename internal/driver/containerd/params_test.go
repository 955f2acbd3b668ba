package containerd

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver/params"
)

// genSpec builds containerd's default spec with opts, as WithNewSpec does, without a
// daemon; the container record is returned for the labels options set on it.
func genSpec(t *testing.T, opts ...oci.SpecOpts) (*oci.Spec, *containers.Container) {
	t.Helper()
	c := &containers.Container{ID: "spec-test"}
	s, err := oci.GenerateSpec(namespaces.WithNamespace(context.Background(), "test"), nil, c, opts...)
	if err != nil {
		t.Fatalf("generate spec: %v", err)
	}
	return s, c
}

// paramSpec parses one parameter and builds the spec its options (and the last ones
// that read them) make.
func paramSpec(t *testing.T, key, value string) (*oci.Spec, *containers.Container, paramSet) {
	t.Helper()
	p, err := parseParameters([]v4.Parameter{{Key: key, Value: value}})
	if err != nil {
		t.Fatalf("parameter %s=%s: %v", key, value, err)
	}
	opts := slices.Clone(p.opts)
	if len(p.capAdd)+len(p.capDrop) > 0 {
		opts = append(opts, withCaps(p.capAdd, p.capDrop))
	}
	s, c := genSpec(t, opts...)
	return s, c, p
}

func rlimit(s *oci.Spec, typ string) *specs.POSIXRlimit {
	for i, r := range s.Process.Rlimits {
		if r.Type == typ {
			return &s.Process.Rlimits[i]
		}
	}
	return nil
}

func mountAt(s *oci.Spec, dst string) *specs.Mount {
	for i, m := range s.Mounts {
		if m.Destination == dst {
			return &s.Mounts[i]
		}
	}
	return nil
}

func hasNamespace(s *oci.Spec, ns specs.LinuxNamespaceType) bool {
	return slices.ContainsFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == ns })
}

// Each mapped parameter makes its part of the OCI spec.
func TestParameterSpecs(t *testing.T) {
	for _, c := range []struct {
		key, value string
		ok         func(s *oci.Spec, c *containers.Container, p paramSet) bool
	}{
		{"ulimit", "nofile=1024:2048", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool {
			r := rlimit(s, "RLIMIT_NOFILE")
			return r != nil && r.Soft == 1024 && r.Hard == 2048
		}},
		{"--ulimit", "core=-1", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool {
			r := rlimit(s, "RLIMIT_CORE")
			return r != nil && r.Soft == ^uint64(0) && r.Hard == ^uint64(0)
		}},
		{"sysctl", "net.core.somaxconn=1024", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool {
			return s.Linux.Sysctl["net.core.somaxconn"] == "1024"
		}},
		{"cap-add", "net_admin,SYS_PTRACE", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool {
			return slices.Contains(s.Process.Capabilities.Bounding, "CAP_NET_ADMIN") && slices.Contains(s.Process.Capabilities.Effective, "CAP_SYS_PTRACE")
		}},
		{"cap-drop", "CHOWN", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool {
			return !slices.Contains(s.Process.Capabilities.Bounding, "CAP_CHOWN") && slices.Contains(s.Process.Capabilities.Bounding, "CAP_KILL")
		}},
		{"cap-drop", "ALL", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool {
			return len(s.Process.Capabilities.Bounding) == 0
		}},
		{"shm-size", "128m", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool {
			m := mountAt(s, "/dev/shm")
			return m != nil && slices.Contains(m.Options, "size=131072k")
		}},
		{"pids-limit", "100", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool {
			return s.Linux.Resources.Pids != nil && *s.Linux.Resources.Pids.Limit == 100
		}},
		{"pids-limit", "-1", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool { return s.Linux.Resources.Pids == nil }},
		{"oom-score-adj", "500", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool {
			return s.Process.OOMScoreAdj != nil && *s.Process.OOMScoreAdj == 500
		}},
		{"read-only", "true", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool { return s.Root.Readonly }},
		{"read-only", "", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool { return s.Root.Readonly }},
		{"tmpfs", "/scratch:size=64m,mode=1777", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool {
			m := mountAt(s, "/scratch")
			return m != nil && m.Type == "tmpfs" && slices.Equal(m.Options, []string{"noexec", "nosuid", "nodev", "size=64m", "mode=1777"})
		}},
		{"user", "1000:1001", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool {
			return s.Process.User.UID == 1000 && s.Process.User.GID == 1001
		}},
		{"env", "GREETING=hi=there", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool {
			return slices.Contains(s.Process.Env, "GREETING=hi=there")
		}},
		{"workdir", "/srv/app", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool { return s.Process.Cwd == "/srv/app" }},
		{"hostname", "web-1.example", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool { return s.Hostname == "web-1.example" }},
		{"security-opt", "no-new-privileges", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool { return s.Process.NoNewPrivileges }},
		{"security-opt", "no-new-privileges:true", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool { return s.Process.NoNewPrivileges }},
		{"security-opt", "no-new-privileges=false", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool { return !s.Process.NoNewPrivileges }},
		{"security-opt", "seccomp=default", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool { return s.Linux.Seccomp == nil }},
		{"memory-swappiness", "10", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool {
			m := s.Linux.Resources.Memory
			return m != nil && m.Swappiness != nil && *m.Swappiness == 10
		}},
		{"memory-swap", "-1", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool {
			return *s.Linux.Resources.Memory.Swap == -1
		}},
		{"memory-reservation", "64", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool {
			return *s.Linux.Resources.Memory.Reservation == 64<<20
		}},
		{"oom-kill-disable", "true", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool {
			return *s.Linux.Resources.Memory.DisableOOMKiller
		}},
		{"blkio-weight", "300", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool {
			return *s.Linux.Resources.BlockIO.Weight == 300
		}},
		{"stop-signal", "SIGINT", func(_ *oci.Spec, c *containers.Container, _ paramSet) bool { return c.Labels[stopSignalLabel] == "2" }},
		{"ipc", "host", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool {
			m := mountAt(s, "/dev/shm")
			return !hasNamespace(s, specs.IPCNamespace) && m != nil && m.Source == "/dev/shm" && m.Type == "bind"
		}},
		{"pid", "host", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool {
			return !hasNamespace(s, specs.PIDNamespace)
		}},
		{"uts", "private", func(s *oci.Spec, _ *containers.Container, _ paramSet) bool {
			return hasNamespace(s, specs.UTSNamespace)
		}},
		{"label", "team=infra", func(_ *oci.Spec, _ *containers.Container, p paramSet) bool { return p.labels["team"] == "infra" }},
		{"add-host", "db.local:10.1.2.3", func(_ *oci.Spec, _ *containers.Container, p paramSet) bool {
			return slices.Equal(p.hosts, []string{"10.1.2.3\tdb.local"})
		}},
		{"add-host", "v6:[fd00::1]", func(_ *oci.Spec, _ *containers.Container, p paramSet) bool {
			return slices.Equal(p.hosts, []string{"fd00::1\tv6"})
		}},
		{"dns", "10.0.0.2,10.0.0.3", func(_ *oci.Spec, _ *containers.Container, p paramSet) bool {
			return slices.Equal(p.dns.Servers, []string{"10.0.0.2", "10.0.0.3"})
		}},
		{"dns-search", "a.example,b.example", func(_ *oci.Spec, _ *containers.Container, p paramSet) bool {
			return slices.Equal(p.dns.Search, []string{"a.example", "b.example"})
		}},
		{"dns-option", "ndots:2", func(_ *oci.Spec, _ *containers.Container, p paramSet) bool {
			return slices.Equal(p.dns.Options, []string{"ndots:2"})
		}},
		{"cpuset", "true", func(_ *oci.Spec, _ *containers.Container, p paramSet) bool { return p.cpu.Bind }},
		{"cpuset-cpus", "0-1", func(_ *oci.Spec, _ *containers.Container, p paramSet) bool { return p.cpu.CPUs == "0-1" }},
		{"cpuset-mems", "0", func(_ *oci.Spec, _ *containers.Container, p paramSet) bool { return p.cpu.Mems == "0" }},
		{"device", "/dev/fuse:/dev/fuse:rw", func(_ *oci.Spec, _ *containers.Container, p paramSet) bool {
			return len(p.devices) == 1 && p.devices[0].Permissions == "rw"
		}},
		{"group-add", "video,44", func(_ *oci.Spec, _ *containers.Container, p paramSet) bool {
			return slices.Equal(p.groups, []string{"video", "44"})
		}},
		{"rm", "true", func(*oci.Spec, *containers.Container, paramSet) bool { return true }},
	} {
		t.Run(c.key+"="+c.value, func(t *testing.T) {
			s, ctr, p := paramSpec(t, c.key, c.value)
			if !c.ok(s, ctr, p) {
				t.Fatalf("spec not as asked:\nprocess %+v\nlinux %+v\nmounts %+v", s.Process, s.Linux, s.Mounts)
			}
		})
	}
}

// Parameters read what the ones before them made: /dev/shm of the host's IPC namespace
// is not sized; groups and capabilities apply after the user and privileges.
func TestParameterOrder(t *testing.T) {
	p, err := parseParameters([]v4.Parameter{{Key: "ipc", Value: "host"}, {Key: "shm-size", Value: "64m"}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := genSpec(t, p.opts...)
	if m := mountAt(s, "/dev/shm"); m == nil || m.Source != "/dev/shm" || slices.Contains(m.Options, "size=65536k") {
		t.Fatalf("/dev/shm %+v", m)
	}
}

// A bad value fails naming the parameter; a parameter without an OCI meaning is refused,
// never dropped.
func TestParameterErrors(t *testing.T) {
	for _, c := range []struct{ key, value, want string }{
		{"log-driver", "syslog", "parameter log-driver: not supported by the containerd driver"},
		{"--init", "true", "parameter init: not supported by the containerd driver"},
		{"mac-address", "02:42:ac:11:00:02", "parameter mac-address: not supported"},
		{"device-read-bps", "/dev/sda:1mb", "parameter device-read-bps: not supported"},
		{"ulimit", "nofile=10:5", "parameter ulimit="},
		{"ulimit", "bogus=1", "invalid ulimit type"},
		{"cap-add", "NOT_A_CAP", "unknown capability CAP_NOT_A_CAP"},
		{"sysctl", "kernel.x=1\nfoo", "want key=value"},
		{"sysctl", "../../etc=1", "want key=value"},
		{"shm-size", "lots", "parameter shm-size"},
		{"tmpfs", "relative", "absolute"},
		{"tmpfs", "/a/../b", "absolute, clean"},
		{"tmpfs", "/x:size=1m,bind", `tmpfs option "bind"`},
		{"user", "root\nx", "want user[:group]"},
		{"env", "=x", "want NAME=value"},
		{"env", "NOVALUE", "want NAME=value"},
		{"workdir", "rel", "absolute"},
		{"hostname", "bad_host!", "not a host name"},
		{"add-host", "db.local", "want host:ip"},
		{"add-host", "db:not-an-ip", "no IP address"},
		{"add-host", "bad host:1.2.3.4", "want host:ip"},
		{"dns", "1.2.3", "parameter dns"},
		{"dns-search", "a.example\nnameserver 6.6.6.6", "one word"},
		{"dns-option", "ndots:2 rotate", "one word"},
		{"security-opt", "apparmor=unconfined", "not supported by the containerd driver"},
		{"security-opt", "seccomp=myprofile", "not supported by the containerd driver"},
		{"label", "berth.node=x", "belong to berth"},
		{"ipc", "container:other", "not supported"},
		{"cpuset-cpus", "0-", "bad cpu list"},
		{"device", "relative", "want host[:container[:rwm]]"},
		{"stop-signal", "SIGNOPE", "parameter stop-signal"},
		{"oom-score-adj", "-1001", "out of range"},
		{"memory-swappiness", "101", "out of range"},
	} {
		t.Run(c.key+"="+c.value, func(t *testing.T) {
			_, err := parseParameters([]v4.Parameter{{Key: c.key, Value: c.value}})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// FuzzParseParameters: no parameter, however made, panics the parser or its options.
func FuzzParseParameters(f *testing.F) {
	for _, seed := range [][2]string{
		{"ulimit", "nofile=1:2"}, {"tmpfs", "/x:size=1m"}, {"add-host", "a:[::1]"}, {"cap-drop", "ALL"},
		{"shm-size", "1k"}, {"device", "/dev/null:/x:r"}, {"security-opt", "no-new-privileges=false"},
		{"sysctl", "a.b=c"}, {"user", "1:2"}, {"label", "a=b"}, {"cpuset-cpus", "0-3,5"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		p, err := parseParameters([]v4.Parameter{{Key: key, Value: value}})
		if err != nil || params.Key(key) == "user" { // WithUser reads the rootfs through the client
			return
		}
		s := &oci.Spec{Process: &specs.Process{}, Linux: &specs.Linux{}}
		for _, o := range p.opts {
			o(context.Background(), nil, &containers.Container{}, s) // errors are fine; panics are not
		}
	})
}
