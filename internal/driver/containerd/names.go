package containerd

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/berthhq/berth/internal/atomicfile"
	"github.com/berthhq/berth/internal/driver"
)

// resolver is a container's resolver, as the Docker driver decides it (applyDNS): the
// spec's dns parameters' servers with only its search domains and options; else the
// node's cluster DNS server (cluster) with the spec's search domains and options over
// its own; else, when the spec gives search domains or options, the host's servers
// (hostServers) with them. nil leaves the host's resolv.conf as it is.
func resolver(cluster *driver.DNS, own driver.DNS, hostServers func() []string) *driver.DNS {
	if len(own.Servers) > 0 {
		return &own
	}
	if cluster == nil || len(cluster.Servers) == 0 {
		if len(own.Search)+len(own.Options) == 0 {
			return nil
		}
		return &driver.DNS{Servers: hostServers(), Search: own.Search, Options: own.Options}
	}
	r := *cluster
	if len(own.Search) > 0 {
		r.Search = own.Search
	}
	if len(own.Options) > 0 {
		r.Options = own.Options
	}
	return &r
}

// hostNameservers are the servers of the host's /etc/resolv.conf.
func hostNameservers() []string {
	b, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "nameserver" {
			out = append(out, f[1])
		}
	}
	return out
}

// resolvConf gives the container its resolver: dns written to the task's files and
// mounted read-only at /etc/resolv.conf, or the host's file when dns is nil.
func (d *Driver) resolvConf(t *driver.Task, dns *driver.DNS) oci.SpecOpts {
	if dns == nil {
		return oci.WithHostResolvconf
	}
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		var b strings.Builder
		for _, srv := range dns.Servers {
			fmt.Fprintf(&b, "nameserver %s\n", srv)
		}
		if len(dns.Search) > 0 {
			fmt.Fprintf(&b, "search %s\n", strings.Join(dns.Search, " "))
		}
		if len(dns.Options) > 0 {
			fmt.Fprintf(&b, "options %s\n", strings.Join(dns.Options, " "))
		}
		return d.mountTaskFile(t, s, "resolv.conf", "/etc/resolv.conf", []byte(b.String()))
	}
}

// defaultHosts is the hosts file of a container without the host's: loopback's names.
const defaultHosts = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"

// withHosts adds the add-host parameters' lines to the container's /etc/hosts: the
// file the network gave it (the host's) or loopback's names, written to the task's
// files and mounted read-only in its place.
func (d *Driver) withHosts(t *driver.Task, lines []string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		base := []byte(defaultHosts)
		if i := slices.IndexFunc(s.Mounts, isHostsMount); i >= 0 {
			b, err := os.ReadFile(s.Mounts[i].Source)
			if err != nil {
				return fmt.Errorf("hosts file: %w", err)
			}
			base = b
		}
		s.Mounts = slices.DeleteFunc(s.Mounts, isHostsMount)
		if len(base) > 0 && base[len(base)-1] != '\n' {
			base = append(base, '\n')
		}
		content := append(base, strings.Join(lines, "\n")+"\n"...)
		return d.mountTaskFile(t, s, "hosts", "/etc/hosts", content)
	}
}

func isHostsMount(m specs.Mount) bool { return path.Clean(m.Destination) == "/etc/hosts" }

// mountTaskFile writes content to the task's files as name and mounts it read-only at
// dst.
func (d *Driver) mountTaskFile(t *driver.Task, s *oci.Spec, name, dst string, content []byte) error {
	host := filepath.Join(d.taskFilesDir(t.ID), name)
	if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := atomicfile.Write(host, content, 0o644); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	s.Mounts = append(s.Mounts, bindMount(host, dst, true))
	return nil
}

// withOwnedFiles gives files (Setup.OwnedFiles: a vcuda share's socket) to the user the
// container runs as, as resolved by the options before it (the image's USER, the user
// parameter), so that only that user may use them.
func withOwnedFiles(files []string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			return nil
		}
		uid, gid := s.Process.User.UID, s.Process.User.GID
		for _, f := range files {
			if err := os.Lchown(f, int(uid), int(gid)); err != nil {
				return fmt.Errorf("give file %s to uid %d: %w", f, uid, err)
			}
		}
		return nil
	}
}
