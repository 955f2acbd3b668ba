package containerd

import (
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
	"golang.org/x/sys/unix"

	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/params"
)

// linuxDevice reads the device node dv names on the host (symlinks followed, as
// dockerd does) and returns it as the OCI spec gives it: the node to create at its
// container path, with the host node's type, numbers, mode and owner, and the device
// cgroup rule that allows its permissions ("rwm" when empty) on it. A host path that is
// no device node fails, naming it.
func linuxDevice(dv driver.Device) (specs.LinuxDevice, specs.LinuxDeviceCgroup, error) {
	perms := dv.Permissions
	if perms == "" {
		perms = "rwm"
	}
	ctr := dv.ContainerPath
	if ctr == "" {
		ctr = dv.HostPath
	}
	switch {
	case !filepath.IsAbs(dv.HostPath):
		return specs.LinuxDevice{}, specs.LinuxDeviceCgroup{}, fmt.Errorf("device %s: the host path must be absolute", dv.HostPath)
	case !path.IsAbs(ctr) || path.Clean(ctr) != ctr || ctr == "/":
		return specs.LinuxDevice{}, specs.LinuxDeviceCgroup{}, fmt.Errorf("device %s: container path %q must be absolute and clean", dv.HostPath, ctr)
	case !params.Perms(perms):
		return specs.LinuxDevice{}, specs.LinuxDeviceCgroup{}, fmt.Errorf("device %s: permissions %q are not r, w and m", dv.HostPath, perms)
	}
	var st unix.Stat_t
	if err := unix.Stat(dv.HostPath, &st); err != nil {
		return specs.LinuxDevice{}, specs.LinuxDeviceCgroup{}, fmt.Errorf("device %s: %w", dv.HostPath, err)
	}
	var typ string
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		typ = "c"
	case unix.S_IFBLK:
		typ = "b"
	default:
		return specs.LinuxDevice{}, specs.LinuxDeviceCgroup{}, fmt.Errorf("device %s: not a device node", dv.HostPath)
	}
	major, minor := int64(unix.Major(uint64(st.Rdev))), int64(unix.Minor(uint64(st.Rdev)))
	mode := os.FileMode(st.Mode & 0o777)
	uid, gid := st.Uid, st.Gid
	dev := specs.LinuxDevice{Path: ctr, Type: typ, Major: major, Minor: minor, FileMode: &mode, UID: &uid, GID: &gid}
	rule := specs.LinuxDeviceCgroup{Allow: true, Type: typ, Major: &major, Minor: &minor, Access: perms}
	return dev, rule, nil
}

// withDevices gives the container device nodes: each created at its container path
// (replacing another of that path) and allowed by the device cgroup.
func withDevices(devs []driver.Device) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if len(devs) == 0 {
			return nil
		}
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if s.Linux.Resources == nil {
			s.Linux.Resources = &specs.LinuxResources{}
		}
		for _, dv := range devs {
			dev, rule, err := linuxDevice(dv)
			if err != nil {
				return err
			}
			s.Linux.Devices = slices.DeleteFunc(s.Linux.Devices, func(d specs.LinuxDevice) bool { return d.Path == dev.Path })
			s.Linux.Devices = append(s.Linux.Devices, dev)
			s.Linux.Resources.Devices = append(s.Linux.Resources.Devices, rule)
		}
		return nil
	}
}

// noCDI refuses CDI devices: containerd's CDI support (pkg/cdi) needs the CDI registry
// module, which berth does not build in; a device plugin that gives device nodes works.
func noCDI(names []string) error {
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("CDI devices %s: not supported by the containerd driver (it gives device nodes, not CDI devices)", strings.Join(names, ", "))
}
