package docker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/cni"
)

// SetupPod creates the pod's sandbox (the network image with --net=none, sleeping) and
// runs CNI ADD on its network namespace, with the pod's port mappings for portmap. It
// returns the sandbox's container ID, which tasks join (JoinTask), and the pod's IP.
// A pod whose sandbox runs is returned as it is; a pod whose sandbox died is torn down
// and set up again.
func (d *Driver) SetupPod(ctx context.Context, id string, labels map[string]string, ports []driver.PortBinding) (string, string, error) {
	if !validID(id) {
		return "", "", fmt.Errorf("setup pod %q: invalid ID", id)
	}
	d.podMu.Lock()
	defer d.podMu.Unlock()
	p, err := d.loadPod(id)
	if err != nil {
		return "", "", err
	}
	if p != nil && p.IP != "" {
		c, err := d.inspect(ctx, p.SandboxID)
		if err == nil && c.State != nil && c.State.Running {
			return p.SandboxID, p.IP, nil
		}
		if err != nil && !cerrdefs.IsNotFound(err) {
			return "", "", d.wrap(err, "setup pod %s: sandbox", id)
		}
		d.log.Warn("pod sandbox gone, setting the pod up again", "pod", id)
	}
	// Whatever is left of an earlier try (state, sandbox, CNI leases) goes first.
	if err := d.teardown(ctx, id); err != nil {
		return "", "", fmt.Errorf("setup pod %s: clean up the earlier sandbox: %w", id, err)
	}
	sandboxID, ip, err := d.setup(ctx, id, labels, ports)
	if err != nil {
		cctx, cancel := background()
		defer cancel()
		if terr := d.teardown(cctx, id); terr != nil {
			d.log.Error("cleaning up a failed pod setup", "pod", id, "err", terr)
		}
		return "", "", fmt.Errorf("setup pod %s: %w", id, err)
	}
	d.log.Info("pod network set up", "pod", id, "sandbox", sandboxID[:12], "ip", ip)
	return sandboxID, ip, nil
}

func (d *Driver) setup(ctx context.Context, id string, labels map[string]string, ports []driver.PortBinding) (string, string, error) {
	img, err := d.sandboxImage(ctx)
	if err != nil {
		return "", "", err
	}
	network, err := cni.Load(d.cniConfDir, d.cniBinDir, d.cniCacheDir)
	if err != nil {
		return "", "", err
	}
	conf, err := network.Bytes()
	if err != nil {
		return "", "", fmt.Errorf("cni: %w", err)
	}
	l := maps.Clone(labels)
	if l == nil {
		l = map[string]string{}
	}
	l[LabelPod] = id
	d.owner.Stamp(l)
	resp, err := d.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: img, Labels: l},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
		Name:       d.sandboxName(id),
	})
	if err != nil {
		return "", "", d.wrap(err, "create sandbox")
	}
	p := &podState{ID: id, Cluster: d.owner.Cluster, SandboxID: resp.ID, Network: network.Name(), Config: conf, Ports: cni.Mappings(ports)}
	if err := d.savePod(p); err != nil {
		return "", "", err
	}
	if _, err := d.cli.ContainerStart(ctx, resp.ID, client.ContainerStartOptions{}); err != nil {
		return "", "", d.wrap(err, "start sandbox")
	}
	c, err := d.inspect(ctx, resp.ID)
	if err != nil {
		return "", "", d.wrap(err, "inspect sandbox")
	}
	if c.State == nil || !c.State.Running || c.State.Pid <= 0 {
		return "", "", fmt.Errorf("sandbox %s is not running (%s)", d.sandboxName(id), stateString(c.State))
	}
	ip, err := network.Add(ctx, resp.ID, netnsPath(c.State.Pid), p.Ports)
	if err != nil {
		return "", "", err
	}
	p.IP = ip
	if err := d.savePod(p); err != nil {
		return "", "", err
	}
	return resp.ID, ip, nil
}

// TeardownPod runs CNI DEL and removes the sandbox. When the sandbox was killed or
// removed behind berth's back, DEL runs without a namespace, which still releases the
// IP lease and port mappings (BCS leaked them). Tearing down a pod that has nothing is
// not an error.
func (d *Driver) TeardownPod(ctx context.Context, id string) error {
	if !validID(id) {
		return fmt.Errorf("teardown pod %q: invalid ID", id)
	}
	d.podMu.Lock()
	defer d.podMu.Unlock()
	if err := d.teardown(ctx, id); err != nil {
		return fmt.Errorf("teardown pod %s: %w", id, err)
	}
	return nil
}

// teardown releases whatever the pod holds; the caller holds podMu. The state file goes
// last, so a DEL that fails is tried again by the next teardown.
func (d *Driver) teardown(ctx context.Context, id string) error {
	p, err := d.loadPod(id)
	if err != nil {
		return err
	}
	ref := d.sandboxName(id)
	if p != nil {
		ref = p.SandboxID
	}
	var sandboxID, netns string
	c, err := d.inspect(ctx, ref)
	if p == nil && cerrdefs.IsNotFound(err) && d.tagged() {
		// A sandbox set up before sandboxes carried their cluster, when the owner's.
		if old, lerr := d.legacy(ctx, containerName("pod-"+id), id, LabelPod); lerr == nil {
			c, err = old, nil
		}
	}
	switch {
	case err == nil && c.Config != nil && c.Config.Labels[LabelPod] == id && d.owns(c):
		sandboxID = c.ID
		if c.State != nil && c.State.Running && c.State.Pid > 0 {
			netns = netnsPath(c.State.Pid)
		}
	case err != nil && !cerrdefs.IsNotFound(err):
		return d.wrap(err, "sandbox")
	}
	if err := d.cniDel(ctx, p, sandboxID, netns); err != nil {
		return err
	}
	if sandboxID != "" {
		_, err := d.cli.ContainerRemove(ctx, sandboxID, client.ContainerRemoveOptions{Force: true})
		if err != nil && !cerrdefs.IsNotFound(err) && !isRemovalInProgress(err) {
			return d.wrap(err, "remove sandbox")
		}
	}
	return d.removePod(id)
}

// cniDel runs DEL with the network config of the ADD when there is a state, else (a
// sandbox without state: a crash before it was written) with the current config.
func (d *Driver) cniDel(ctx context.Context, p *podState, sandboxID, netns string) error {
	var network *cni.Network
	var err error
	var ports []cni.PortMapping
	switch {
	case p != nil:
		network, err = cni.FromBytes(p.Config, d.cniBinDir, d.cniCacheDir)
		sandboxID, ports = p.SandboxID, p.Ports
	case sandboxID != "":
		network, err = cni.Load(d.cniConfDir, d.cniBinDir, d.cniCacheDir)
	default:
		return nil
	}
	if err != nil {
		return err
	}
	d.log.Info("cni del", "sandbox", short(sandboxID), "netns", netns, "network", network.Name())
	return network.Del(ctx, sandboxID, netns, ports)
}

// PodIDs lists the pods that have a sandbox or a network state, so an agent can tear
// down the ones it no longer runs.
func (d *Driver) PodIDs(ctx context.Context) ([]string, error) {
	ids, err := d.podIDsFromFiles()
	if err != nil {
		return nil, err
	}
	list, err := d.listLabelled(ctx, LabelPod)
	if err != nil {
		return nil, d.wrap(err, "list sandboxes")
	}
	for _, c := range list {
		if d.owner.Owns(c.Labels) { // another cluster's sandboxes are its agent's to tear down
			ids = append(ids, c.Labels[LabelPod])
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

func netnsPath(pid int) string { return "/proc/" + strconv.Itoa(pid) + "/ns/net" }

func short(id string) string { return id[:min(12, len(id))] }
