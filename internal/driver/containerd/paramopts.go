package containerd

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/cap"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/driver/params"
)

// tmpfsOptions are the mount options a tmpfs parameter may give: sizes, modes and
// owners of the tmpfs and the usual flags; anything else could ask the kernel for more
// than a scratch directory.
var tmpfsOptions = regexp.MustCompile(`^(size=[0-9]+[kmgKMG%]?|nr_blocks=[0-9]+[kmgKMG]?|nr_inodes=[0-9]+[kmgKMG]?|mode=[0-7]{3,4}|uid=[0-9]+|gid=[0-9]+|ro|rw|exec|noexec|suid|nosuid|dev|nodev|atime|noatime|relatime)$`)

// tmpfs is path[:options]: a tmpfs at path, noexec, nosuid and nodev unless the options
// say otherwise, as docker run mounts one.
func tmpfs(v string, p *paramSet) error {
	dst, opts, _ := strings.Cut(v, ":")
	if !path.IsAbs(dst) || path.Clean(dst) != dst || dst == "/" {
		return fmt.Errorf("want an absolute, clean path[:options] other than /")
	}
	options := []string{"noexec", "nosuid", "nodev"}
	for _, o := range params.List(opts) {
		if !tmpfsOptions.MatchString(o) {
			return fmt.Errorf("tmpfs option %q: not one of size, nr_blocks, nr_inodes, mode, uid, gid, ro, rw, [no]exec, [no]suid, [no]dev, [no|rel]atime", o)
		}
		options = append(options, o)
	}
	p.opts = append(p.opts, oci.WithMounts([]specs.Mount{{Type: "tmpfs", Source: "tmpfs", Destination: dst, Options: options}}))
	return nil
}

// userPattern is user[:group], each a name or an ID.
var userPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,31})?$`)

// user runs the process as user[:group], names looked up in the image's /etc/passwd and
// /etc/group.
func user(v string, p *paramSet) error {
	if !userPattern.MatchString(v) {
		return fmt.Errorf("want user[:group], names or IDs")
	}
	p.opts = append(p.opts, oci.WithUser(v))
	return nil
}

// envName is an environment variable's name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// env is NAME=value, over the task's env (docker's -e NAME, the agent's own value, is
// not given: the node's env is no spec's business).
func env(v string, p *paramSet) error {
	k, _, ok := strings.Cut(v, "=")
	if !ok || !envName.MatchString(k) {
		return fmt.Errorf("want NAME=value")
	}
	p.opts = append(p.opts, oci.WithEnv([]string{v}))
	return nil
}

// hostLabel is one label of a host name.
var hostLabel = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?$`)

// validHost reports whether s is a host name: dot-separated labels, 253 bytes at most.
func validHost(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if !hostLabel.MatchString(l) {
			return false
		}
	}
	return true
}

// hostname is the container's host name (64 bytes at most, the kernel's limit).
func hostname(v string, p *paramSet) error {
	if !validHost(v) || len(v) > 64 {
		return fmt.Errorf("not a host name of 64 bytes or less")
	}
	p.opts = append(p.opts, oci.WithHostname(v))
	return nil
}

// addHost is host:ip, a line of /etc/hosts.
func addHost(v string, p *paramSet) error {
	host, ip, ok := strings.Cut(v, ":")
	if !ok || !validHost(host) {
		return fmt.Errorf("want host:ip")
	}
	a, err := netip.ParseAddr(strings.Trim(ip, "[]"))
	if err != nil || a.Zone() != "" {
		return fmt.Errorf("want host:ip, %q is no IP address", ip)
	}
	p.hosts = append(p.hosts, a.String()+"\t"+host)
	return nil
}

// resolverWords adds search domains or resolver options: one word each, since they
// are written into the container's resolv.conf.
func resolverWords(dst *[]string, words []string) error {
	for _, w := range words {
		if w == "" || len(w) > 253 || strings.ContainsFunc(w, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '#' || r == ';' }) {
			return fmt.Errorf("%q: want one word of at most 253 bytes", w)
		}
		*dst = append(*dst, w)
	}
	return nil
}

// sysctlKey is a kernel parameter's name; runc refuses those a container's namespaces
// do not own.
var sysctlKey = regexp.MustCompile(`^[a-z0-9_]+([./][a-zA-Z0-9_-]+)+$`)

// sysctl is key=value, a kernel parameter of the container's namespaces.
func sysctl(v string, p *paramSet) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || !sysctlKey.MatchString(k) || strings.ContainsAny(val, "\n\x00") {
		return fmt.Errorf("want key=value")
	}
	p.opts = append(p.opts, func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if s.Linux.Sysctl == nil {
			s.Linux.Sysctl = map[string]string{}
		}
		s.Linux.Sysctl[k] = val
		return nil
	})
	return nil
}

// label is key=value, a label of the container; berth.* belong to berth.
func label(v string, p *paramSet) error {
	k, _, _ := strings.Cut(v, "=")
	if params.ReservedLabel(k) {
		return fmt.Errorf("labels berth.* belong to berth")
	}
	return params.SetKV(&p.labels, v)
}

// securityOpt maps docker's security options: no-new-privileges (bare, =BOOL or :BOOL;
// containerd's default spec already sets it, so only =false changes anything);
// seccomp=builtin or default, which keep containerd's default profile (lastOpts), and
// unconfined, which is none. A node
// profile by name, AppArmor and SELinux labels are not supported.
func securityOpt(v string, p *paramSet) error {
	k, val, ok := acl.SplitSecurityOpt(v)
	switch {
	case v == "no-new-privileges" || (ok && k == "no-new-privileges"):
		b, err := params.Bool(val)
		p.opts = append(p.opts, withProcess(func(pr *specs.Process) { pr.NoNewPrivileges = b }))
		return err
	case ok && k == "seccomp" && (val == acl.SeccompBuiltin || val == acl.SeccompDefault || val == "unconfined"):
		p.unconfined = val == "unconfined"
		return nil
	}
	return fmt.Errorf("not supported by the containerd driver (no-new-privileges, seccomp=builtin, default or unconfined)")
}

// capName is a capability's name as OCI writes it (CAP_NET_ADMIN), from docker's forms
// (net_admin, NET_ADMIN, CAP_NET_ADMIN), or ALL.
func capName(c string) (string, error) {
	c = strings.ToUpper(c)
	if c == "ALL" {
		return c, nil
	}
	if !strings.HasPrefix(c, "CAP_") {
		c = "CAP_" + c
	}
	if !slices.Contains(cap.Known(), c) {
		return "", fmt.Errorf("unknown capability %s", c)
	}
	return c, nil
}

// withCaps applies cap-drop, then cap-add, as dockerd does: drop ALL leaves none but
// those added, add ALL gives every capability the kernel knows.
func withCaps(add, drop []string) oci.SpecOpts {
	return func(ctx context.Context, cl oci.Client, c *containers.Container, s *oci.Spec) error {
		if slices.Contains(drop, "ALL") {
			if err := oci.WithCapabilities(nil)(ctx, cl, c, s); err != nil {
				return err
			}
		} else if err := oci.WithDroppedCapabilities(drop)(ctx, cl, c, s); err != nil {
			return err
		}
		if slices.Contains(add, "ALL") {
			return oci.WithAllKnownCapabilities(ctx, cl, c, s)
		}
		return oci.WithAddedCapabilities(add)(ctx, cl, c, s)
	}
}

// withResources changes the spec's cgroup resources, creating them when missing.
func withResources(f func(r *specs.LinuxResources)) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if s.Linux.Resources == nil {
			s.Linux.Resources = &specs.LinuxResources{}
		}
		f(s.Linux.Resources)
		return nil
	}
}

// memory is the resources' memory block, created when missing.
func memory(r *specs.LinuxResources) *specs.LinuxMemory {
	if r.Memory == nil {
		r.Memory = &specs.LinuxMemory{}
	}
	return r.Memory
}

// withProcess changes the spec's process, creating it when missing.
func withProcess(f func(p *specs.Process)) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		f(s.Process)
		return nil
	}
}

// withShmSize sizes /dev/shm; a container in the host's IPC namespace has the host's
// (withHostShm), which it does not size, as with dockerd.
func withShmSize(kb int64) oci.SpecOpts {
	return func(ctx context.Context, cl oci.Client, c *containers.Container, s *oci.Spec) error {
		if err := oci.WithDevShmSize(kb)(ctx, cl, c, s); err != nil && !errors.Is(err, oci.ErrNoShmMount) {
			return err
		}
		return nil
	}
}

// withHostShm gives a container in the host's IPC namespace the host's /dev/shm, as
// dockerd does for --ipc=host: shared memory segments and POSIX shm both are the host's.
func withHostShm(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
	s.Mounts = slices.DeleteFunc(s.Mounts, func(m specs.Mount) bool { return path.Clean(m.Destination) == "/dev/shm" })
	s.Mounts = append(s.Mounts, bindMount("/dev/shm", "/dev/shm", false))
	return nil
}
