package docker

import (
	"context"
	"errors"
	"strings"

	"fmt"
	"maps"
	"os"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/cpubind"
	"github.com/berthhq/berth/internal/driver/params"
	"github.com/berthhq/berth/internal/hostports"
)

// cleanupTimeout bounds the removals done after a failure, when the caller's ctx may
// already have ended.
const cleanupTimeout = 30 * time.Second

// Start pulls the image per the pull policy, writes the task's files, creates the
// container berth-<cluster tag>_<id> (owner.go) and starts it. It returns once Docker
// says the container runs.
// A container that was created but did not run (its command missing, exited at once)
// is kept, and its state is returned with the error, so the executor can report how it
// ended before removing it.
func (d *Driver) Start(ctx context.Context, t *driver.Task) (driver.State, error) {
	if t.Container == nil {
		return driver.State{}, fmt.Errorf("task %s: not a container task", t.ID)
	}
	t = t.WithSetup()
	if !validID(t.ID) {
		return driver.State{}, fmt.Errorf("task %q: invalid ID for a container name", t.ID)
	}
	if !d.starting.Begin(t.ID) {
		return driver.State{}, fmt.Errorf("task %s: already being started", t.ID)
	}
	defer d.starting.End(t.ID)
	name := d.name(t.ID)
	// An older container of the task (untagged name) counts too: two of one task would
	// both be listed as it. Another cluster's does not exist for this driver.
	c, err := d.find(ctx, t.ID)
	if err == nil {
		return driver.State{}, fmt.Errorf("task %s: container %s already exists", t.ID, strings.TrimPrefix(c.Name, "/"))
	}
	if !errors.Is(err, driver.ErrNotFound) {
		return driver.State{}, fmt.Errorf("start task %s: %w", t.ID, err)
	}
	if err := d.checkRuntime(ctx, t); err != nil {
		return driver.State{}, fmt.Errorf("start task %s: %w", t.ID, err)
	}
	spec, err := d.buildSpec(ctx, t)
	if err != nil {
		return driver.State{}, fmt.Errorf("start task %s: %w", t.ID, err)
	}
	id, err := d.create(ctx, t, spec, name)
	if err == nil {
		if err = d.ownFiles(ctx, id, append(d.fileSources(t.ID, spec.hc.Mounts), t.Setup.OwnedFiles...)); err != nil {
			rctx, cancel := background()
			d.cli.ContainerRemove(rctx, id, client.ContainerRemoveOptions{Force: true})
			cancel()
		}
	}
	if err != nil {
		os.RemoveAll(d.taskFilesDir(t.ID))
		return driver.State{}, fmt.Errorf("start task %s: %w", t.ID, err)
	}
	d.log.Info("starting container", "task", t.ID, "container", id[:12], "image", t.Container.Image, "network", spec.hc.NetworkMode)
	_, startErr := d.cli.ContainerStart(ctx, id, client.ContainerStartOptions{})
	// Inspect even after an error: the exit code and Docker's message are the report.
	ictx, cancel := background()
	defer cancel()
	st, ierr := d.Inspect(ictx, t.ID)
	if startErr != nil {
		err := d.wrap(startErr, "start task %s (image %s)", t.ID, t.Container.Image)
		if hostports.InUseMessage(startErr.Error()) {
			err = driver.PortInUse(err) // the executor asks for other ports, not a restart
		}
		return st, err
	}
	if ierr != nil {
		return st, fmt.Errorf("start task %s: %w", t.ID, ierr)
	}
	if !st.Running && !t.RunToEnd {
		return st, fmt.Errorf("start task %s: container %s is %s right after its start (exit code %d, oom killed %v)%s",
			t.ID, name, st.Info.Status, st.Info.ExitCode, st.Info.OOMKilled, suffix(st.Info.Message))
	}
	return st, nil
}

// containerSpec is everything ContainerCreate takes, plus what the create step resolves.
type containerSpec struct {
	cfg   *container.Config
	hc    *container.HostConfig
	nc    *network.NetworkingConfig
	extra paramExtras
}

// buildSpec turns a task into Docker's container settings: image and command line,
// environment, labels, resources, parameters, network, files and volumes.
func (d *Driver) buildSpec(ctx context.Context, t *driver.Task) (containerSpec, error) {
	c := t.Container
	img, err := d.ensureImage(ctx, c, t.Setup)
	if err != nil {
		return containerSpec{}, err
	}
	var imgEntrypoint []string
	if img.Config != nil {
		imgEntrypoint = img.Config.Entrypoint
	}
	entrypoint, cmd, err := commandLine(c.Image, imgEntrypoint, c.Command, c.Args)
	if err != nil {
		return containerSpec{}, err
	}
	cfg := &container.Config{
		Image:      c.Image,
		Entrypoint: entrypoint,
		Cmd:        cmd,
		Env:        t.Env,
		WorkingDir: c.WorkingDir,
	}
	hc := &container.HostConfig{Privileged: c.Privileged, Runtime: t.Setup.Runtime}
	applyResources(t, hc)
	x, err := applyParameters(c.Parameters, d.seccompProfiles, cfg, hc, d.log.With("task", t.ID))
	if err != nil {
		return containerSpec{}, err
	}
	if x.memorySwap != nil {
		hc.MemorySwap = *x.memorySwap
	}
	if d.logLimits.Rotates() && hc.LogConfig.Type == "" && len(hc.LogConfig.Config) == 0 {
		applyLogLimits(hc, d.daemonLogDriver(ctx), d.logLimits)
	}
	applyDNS(t, hc)
	if err := d.applyGPUs(t, cfg, hc); err != nil {
		return containerSpec{}, err
	}
	applyDevices(t, hc)
	labels := map[string]string{}
	maps.Copy(labels, cfg.Labels)
	maps.Copy(labels, t.Labels)
	labels[LabelID] = t.ID
	d.owner.Stamp(labels)
	cfg.Labels = labels
	nc, err := d.setupNetwork(ctx, t, x, cfg, hc)
	if err != nil {
		return containerSpec{}, err
	}
	vols, err := volumeMounts(t.Setup.Volumes)
	if err != nil {
		return containerSpec{}, err
	}
	files, err := d.writeFiles(t, c.WorkingDir)
	if err != nil {
		return containerSpec{}, err
	}
	hc.Mounts = append(append(vols, files...), hc.Mounts...) // the GPUs' mounts last
	return containerSpec{cfg: cfg, hc: hc, nc: nc, extra: x}, nil
}

// create binds CPUs when asked and creates the container. The cpuset lock is held from
// choosing the CPUs until the container (and its label) exists.
func (d *Driver) create(ctx context.Context, t *driver.Task, s containerSpec, name string) (string, error) {
	r := cpuRequest(s.extra, t.CPURequest, cpubind.PreferredNUMA(t.GPUs))
	if r.Binds() {
		d.cpusetMu.Lock()
		defer d.cpusetMu.Unlock()
	}
	b, err := d.resolveCPUSet(ctx, r)
	if err != nil {
		return "", err
	}
	s.hc.CpusetCpus, s.hc.CpusetMems = b.CPUs, b.Mems
	if b.CPUs != "" {
		s.cfg.Labels[d.cpusetLabel] = b.CPUs
		d.log.Info("binding cpus", "task", t.ID, "cpus", b.CPUs, "mems", b.Mems)
	}
	resp, err := d.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: s.cfg, HostConfig: s.hc, NetworkingConfig: s.nc, Name: name})
	if err != nil {
		return "", d.wrap(err, "create container %s", name)
	}
	for _, w := range resp.Warnings {
		d.log.Warn("docker warning", "task", t.ID, "warning", w)
	}
	return resp.ID, nil
}

// applyResources sets BCS's container resources: the task's cpu-shares (request x 1024,
// 1024 without a request, 2 for a revocable task: driver.Task.CPUShares), a CFS quota of limit x 100000 per 100000 us when limited,
// and the memory limit with no swap beyond it. A limit below Docker's minimum (6 MB,
// refused at admission) is passed on, so Docker refuses the start and says why, rather
// than the container running without a limit.
func applyResources(t *driver.Task, hc *container.HostConfig) {
	hc.CPUShares = int64(t.CPUShares())
	if t.CPULimit > 0 {
		hc.CPUPeriod = 100000
		hc.CPUQuota = max(int64(t.CPULimit*100000), 1000) // 1 ms: the kernel's minimum
	}
	if t.MemoryLimit > 0 {
		hc.Memory = int64(t.MemoryLimit * (1 << 20))
		hc.MemorySwap = hc.Memory
	}
}

func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// applyDNS makes the node's cluster DNS server the container's resolver, with its search
// domains and options, unless the spec's parameters set a server (then nothing of the
// cluster's applies); the spec's own dns-search and dns-option parameters win over the
// cluster's. A server on a loopback address is out of reach of a container with a
// network of its own, which then keeps Docker's default; a container that joins
// another's network has that one's resolver (Docker refuses both).
func applyDNS(t *driver.Task, hc *container.HostConfig) {
	if t.Setup.DNS == nil || len(hc.DNS) > 0 || t.Setup.JoinTask != "" {
		return
	}
	servers, err := params.Addrs(t.Setup.DNS.Servers)
	if err != nil {
		return
	}
	for _, ip := range servers {
		if ip.Zone() != "" || (ip.IsLoopback() && !strings.EqualFold(t.Setup.NetworkMode, "HOST")) {
			return
		}
	}
	hc.DNS = servers
	if len(hc.DNSSearch) == 0 {
		hc.DNSSearch = t.Setup.DNS.Search
	}
	if len(hc.DNSOptions) == 0 {
		hc.DNSOptions = t.Setup.DNS.Options
	}
}
