package containerd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/contrib/seccomp"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/cpubind"
)

// taskSpec is a task's spec options and the CPU binding its parameters ask for, which
// create resolves while it holds cpusetMu.
type taskSpec struct {
	opts []oci.SpecOpts
	cpu  cpubind.Request
}

// specOpts turns a task into its OCI spec, on top of containerd's defaults and the
// image's config: the command line by BCS's rules, env, working dir, host name, mounts
// (volumes, the task's files, a resolver), resources, the network, privileges, the
// docker parameters (params.go), devices and cards.
func (d *Driver) specOpts(ctx context.Context, t *driver.Task, img client.Image, mounts []specs.Mount) (taskSpec, error) {
	c := t.Container
	if err := unsupported(t); err != nil {
		return taskSpec{}, err
	}
	p, err := parseParameters(c.Parameters)
	if err != nil {
		return taskSpec{}, err
	}
	ispec, err := img.Spec(ctx)
	if err != nil {
		return taskSpec{}, d.wrap(err, "image %s: config", c.Image)
	}
	entrypoint, cmd, err := commandLine(c.Image, ispec.Config.Entrypoint, ispec.Config.Cmd, c.Command, c.Args)
	if err != nil {
		return taskSpec{}, err
	}
	opts := []oci.SpecOpts{
		withOCIVersion(ociVersion),
		oci.WithImageConfig(img),
		oci.WithProcessArgs(append(entrypoint, cmd...)...),
		oci.WithEnv(t.Env),
		oci.WithMounts(mounts),
	}
	if c.WorkingDir != "" {
		if !path.IsAbs(c.WorkingDir) {
			return taskSpec{}, fmt.Errorf("workingDir %q: must be absolute", c.WorkingDir)
		}
		opts = append(opts, oci.WithProcessCwd(c.WorkingDir))
	}
	if t.Setup.Hostname != "" {
		opts = append(opts, oci.WithHostname(t.Setup.Hostname))
	}
	opts = append(opts, resourceOpts(t)...)
	net, err := d.networkOpts(ctx, t, p.dns)
	if err != nil {
		return taskSpec{}, err
	}
	opts = append(opts, net...)
	if c.Privileged {
		opts = append(opts, oci.WithPrivileged, oci.WithAllDevicesAllowed, oci.WithHostDevices)
	}
	if sharedMounts(mounts) {
		opts = append(opts, withSharedRootfs)
	}
	opts = append(opts, p.opts...)
	devices, err := d.deviceOpts(t, p.devices)
	if err != nil {
		return taskSpec{}, err
	}
	opts = append(append(opts, devices...), d.lastOpts(t, p)...)
	p.cpu.CPURequest, p.cpu.PreferNUMA = t.CPURequest, cpubind.PreferredNUMA(t.GPUs)
	return taskSpec{opts: opts, cpu: p.cpu}, nil
}

// lastOpts are the options that read what the others made: extra hosts over the hosts
// file the network gave, groups after the user (which resets them), capabilities
// after privileges (a privileged container keeps all of them, as with dockerd), the
// seccomp profile after the capabilities (containerd's default profile, Docker's
// equivalent, allows the syscalls of the capabilities the container has; none for a
// privileged container or seccomp=unconfined, as with dockerd), labels, and the files
// given to the user the container runs as.
func (d *Driver) lastOpts(t *driver.Task, p paramSet) []oci.SpecOpts {
	var opts []oci.SpecOpts
	if len(p.hosts) > 0 {
		opts = append(opts, d.withHosts(t, p.hosts))
	}
	if len(p.groups) > 0 {
		opts = append(opts, oci.WithAppendAdditionalGroups(p.groups...))
	}
	if !t.Container.Privileged && len(p.capAdd)+len(p.capDrop) > 0 {
		opts = append(opts, withCaps(p.capAdd, p.capDrop))
	}
	if !t.Container.Privileged && !p.unconfined {
		opts = append(opts, seccomp.WithDefaultProfile())
	}
	for _, k := range slices.Sorted(maps.Keys(p.labels)) {
		opts = append(opts, withContainerLabel(k, p.labels[k]))
	}
	if len(t.Setup.OwnedFiles) > 0 {
		opts = append(opts, withOwnedFiles(t.Setup.OwnedFiles))
	}
	return opts
}

// ociVersion is the runtime spec version the driver's specs claim. The oci package
// writes its own (1.3.0), which Debian's crun 1.8 refuses ("unknown version
// specified"); nothing the driver sets needs more than 1.1.
const ociVersion = "1.1.0"

func withOCIVersion(v string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		s.Version = v
		return nil
	}
}

// unsupported refuses what the Docker driver honours and this one does not, rather
// than run the container without it (docs/runtimes.md).
func unsupported(t *driver.Task) error {
	s := t.Setup
	if len(s.PortBindings) > 0 && !strings.EqualFold(s.NetworkMode, "HOST") {
		return errors.New("not supported by the containerd driver yet: port mappings")
	}
	return nil
}

// commandLine applies BCS's rules for command and args (the Docker driver's, on the
// image's entrypoint and cmd): with an entrypoint, a command replaces it and args
// replace the image's cmd (no args: the image's cmd stays only when the entrypoint
// does); without one, command + args run, and no command is an error.
func commandLine(image string, imgEntrypoint, imgCmd []string, command string, args []string) (entrypoint, cmd []string, err error) {
	if len(imgEntrypoint) > 0 {
		entrypoint, cmd = imgEntrypoint, imgCmd
		if command != "" {
			entrypoint, cmd = []string{command}, nil
		}
		if len(args) > 0 {
			cmd = args
		}
		return entrypoint, cmd, nil
	}
	if command == "" {
		return nil, nil, fmt.Errorf("image %s has no entrypoint and the task has no command", image)
	}
	return nil, append([]string{command}, args...), nil
}

// resourceOpts are BCS's container resources, as the Docker driver sets them: the task's
// cpu shares (request x 1024, 1024 without a request, 2 for a revocable task:
// driver.Task.CPUShares), a CFS quota of limit x 100000 per
// 100000 us when limited, and the memory limit with no swap beyond it.
func resourceOpts(t *driver.Task) []oci.SpecOpts {
	opts := []oci.SpecOpts{oci.WithCPUShares(t.CPUShares())}
	if t.CPULimit > 0 {
		opts = append(opts, oci.WithCPUCFS(max(int64(t.CPULimit*100000), 1000), 100000))
	}
	if t.MemoryLimit > 0 {
		mem := int64(t.MemoryLimit * (1 << 20))
		opts = append(opts, oci.WithMemoryLimit(uint64(mem)), withMemorySwap(mem))
	}
	return opts
}

// withMemorySwap sets memory+swap, which oci.WithMemorySwap does not on containerd's
// cgroup v1 defaults when the resources block is missing.
func withMemorySwap(v int64) oci.SpecOpts {
	return withResources(func(r *specs.LinuxResources) { memory(r).Swap = &v })
}

// networkOpts put the container in the host's network, in the network namespace of the
// task or pod sandbox it joins (the pod's first container or network holder, or its CNI
// sandbox: Setup.JoinTask), or in a network namespace of its own with loopback only
// (NONE). A network of its own with an address comes from a CNI sandbox (SetupPod;
// BRIDGE pods get one too: BridgeThroughCNI); user networks are not supported. The
// resolver is the one resolver gives from the node's and the spec's (own) settings.
func (d *Driver) networkOpts(ctx context.Context, t *driver.Task, own driver.DNS) ([]oci.SpecOpts, error) {
	s := t.Setup
	switch {
	case s.JoinTask != "":
		pid, ip, err := d.joinTarget(ctx, s.JoinTask)
		if err != nil {
			return nil, err
		}
		ns := specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: netnsPath(pid)}
		opts := []oci.SpecOpts{oci.WithLinuxNamespace(ns), oci.WithHostHostsFile, d.resolvConf(t, resolver(t.Setup.DNS, own, hostNameservers))}
		if ip != "" {
			opts = append(opts, withContainerLabel(labelIP, ip))
		}
		return opts, nil
	case strings.EqualFold(s.NetworkMode, "HOST"):
		return []oci.SpecOpts{oci.WithHostNamespace(specs.NetworkNamespace), oci.WithHostHostsFile, d.resolvConf(t, resolver(t.Setup.DNS, own, hostNameservers))}, nil
	case strings.EqualFold(s.NetworkMode, "NONE"):
		// The image's resolver, unless the spec's dns parameters ask for one: without
		// a network, the node's cluster DNS server is out of reach.
		if dns := resolver(nil, own, hostNameservers); dns != nil {
			return []oci.SpecOpts{d.resolvConf(t, dns)}, nil
		}
		return nil, nil
	case s.NetworkMode == "":
		return nil, errors.New("no network mode and no task to join")
	}
	return nil, fmt.Errorf("network mode %s: not supported by the containerd driver (HOST, NONE, joining a task, or a CNI sandbox for CNI and BRIDGE pods)", s.NetworkMode)
}

// joinTarget is the PID whose network namespace a task joins: the pod's sandbox's, with
// the pod's IP, when ref names one, else task ref's.
func (d *Driver) joinTarget(ctx context.Context, ref string) (int, string, error) {
	sb, err := d.sandbox(ctx, ref)
	switch {
	case err == nil && sb.pid > 0:
		return sb.pid, sb.ip, nil
	case err == nil:
		return 0, "", fmt.Errorf("join the network of pod sandbox %s: its task is not running", ref)
	case !errors.Is(err, driver.ErrNotFound):
		return 0, "", fmt.Errorf("join the network of pod sandbox %s: %w", ref, err)
	}
	pid, err := d.taskPID(ctx, ref)
	if err != nil {
		return 0, "", fmt.Errorf("join the network of task %s: %w", ref, err)
	}
	return pid, "", nil
}

// withContainerLabel sets a label on the container being created (a spec option runs
// on the container record before it is stored).
func withContainerLabel(key, value string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, c *containers.Container, _ *oci.Spec) error {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[key] = value
		return nil
	}
}

// sharedMounts reports whether a mount propagates both ways (driver.PropagationRShared).
func sharedMounts(mounts []specs.Mount) bool {
	for _, m := range mounts {
		if slices.Contains(m.Options, driver.PropagationRShared) {
			return true
		}
	}
	return false
}

// withSharedRootfs makes the container's root a shared mount, as the CRI does for a
// bidirectional mount: an rshared bind under a private root would not propagate.
func withSharedRootfs(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
	if s.Linux == nil {
		s.Linux = &specs.Linux{}
	}
	s.Linux.RootfsPropagation = driver.PropagationRShared
	return nil
}
