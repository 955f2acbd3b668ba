package containerd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/identifiers"
	"github.com/containerd/containerd/v2/pkg/oci"
	cerrdefs "github.com/containerd/errdefs"

	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/cni"
)

// sandboxPrefix starts the name of a pod's sandbox after the driver's prefix, as the
// Docker driver names its sandboxes: a pod ID ("{namespace}.{name}") never makes a task
// ID ("{namespace}.{name}.{task}"), so the names do not meet.
const sandboxPrefix = "pod-"

// labelIP holds the pod's IP on its sandbox and on the tasks that join it, so Inspect
// reports it also to an agent that restarted (containerd knows nothing of CNI).
const labelIP = "berth.containerd.ip"

func (d *Driver) sandboxName(id string) string { return d.name(sandboxPrefix + id) }

// validPodID refuses pod IDs that make no containerd ID or no single state file name.
func (d *Driver) validPodID(id string) bool { return d.validID(sandboxPrefix + id) }

func (d *Driver) podStates() cni.States { return cni.States{Dir: d.podsDir, Cluster: d.owner.Cluster} }

// BridgeThroughCNI reports that BRIDGE pods are CNI pods on this driver
// (driver.CNIBridge): containerd has no bridge of its own.
func (d *Driver) BridgeThroughCNI() bool { return true }

// SetupPod creates the pod's sandbox (the network image, sleeping, in a network
// namespace of its own) and runs CNI ADD on its namespace with the pod's port mappings
// for portmap. It returns the sandbox's container ID, which tasks join (JoinTask), and
// the pod's IP. A pod whose sandbox runs is returned as it is; a pod whose sandbox died
// is torn down and set up again.
func (d *Driver) SetupPod(ctx context.Context, id string, labels map[string]string, ports []driver.PortBinding) (string, string, error) {
	if !d.validPodID(id) {
		return "", "", fmt.Errorf("setup pod %q: invalid ID", id)
	}
	ctx = d.ctx(ctx)
	d.podMu.Lock()
	defer d.podMu.Unlock()
	p, err := d.podStates().Load(id)
	if err != nil {
		return "", "", err
	}
	if p != nil && p.IP != "" {
		sb, err := d.sandbox(ctx, p.SandboxID)
		if err == nil && sb.pod == id && sb.pid > 0 {
			return p.SandboxID, p.IP, nil
		}
		if err != nil && !errors.Is(err, driver.ErrNotFound) {
			return "", "", fmt.Errorf("setup pod %s: %w", id, err)
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
		if terr := d.teardown(d.ctx(cctx), id); terr != nil {
			d.log.Error("cleaning up a failed pod setup", "pod", id, "err", terr)
		}
		return "", "", fmt.Errorf("setup pod %s: %w", id, err)
	}
	d.log.Info("pod network set up", "pod", id, "sandbox", sandboxID, "ip", ip)
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
	delete(l, LabelID) // a sandbox is no task (List skips it)
	l[LabelPod] = id
	d.owner.Stamp(l)
	name := d.sandboxName(id)
	c, err := d.cli.NewContainer(ctx, name,
		client.WithImage(img),
		client.WithSnapshotter(d.snapshotter),
		client.WithNewSnapshot(name, img),
		d.withRuntime(d.runtimes[d.defaultRuntime]), // a sandbox only holds a namespace
		// containerd's default spec gives the sandbox a network namespace of its own.
		client.WithNewSpec(withOCIVersion(ociVersion), oci.WithImageConfig(img)),
		client.WithAdditionalContainerLabels(l),
	)
	if err != nil {
		return "", "", d.wrap(err, "create sandbox %s", name)
	}
	p := &cni.PodState{ID: id, Cluster: d.owner.Cluster, SandboxID: name, Network: network.Name(), Config: conf, Ports: cni.Mappings(ports)}
	if err := d.podStates().Save(p); err != nil {
		return "", "", err
	}
	task, err := c.NewTask(ctx, cio.NullIO)
	if err != nil {
		return "", "", d.wrap(err, "create the sandbox's task")
	}
	if err := task.Start(ctx); err != nil {
		return "", "", d.wrap(err, "start the sandbox's task")
	}
	ip, err := network.Add(ctx, name, netnsPath(int(task.Pid())), p.Ports)
	if err != nil {
		return "", "", err
	}
	p.IP = ip
	if err := d.podStates().Save(p); err != nil {
		return "", "", err
	}
	if _, err := c.SetLabels(ctx, map[string]string{labelIP: ip}); err != nil {
		return "", "", d.wrap(err, "label sandbox %s", name)
	}
	return name, ip, nil
}

// TeardownPod runs CNI DEL and removes the sandbox. When the sandbox was killed or
// removed behind berth's back, DEL runs without a namespace, which still releases the
// IP lease and port mappings. Tearing down a pod that has nothing is not an error.
func (d *Driver) TeardownPod(ctx context.Context, id string) error {
	if !d.validPodID(id) {
		return fmt.Errorf("teardown pod %q: invalid ID", id)
	}
	d.podMu.Lock()
	defer d.podMu.Unlock()
	if err := d.teardown(d.ctx(ctx), id); err != nil {
		return fmt.Errorf("teardown pod %s: %w", id, err)
	}
	return nil
}

// teardown releases whatever the pod holds; the caller holds podMu. The state file goes
// last, so a DEL that fails is tried again by the next teardown.
func (d *Driver) teardown(ctx context.Context, id string) error {
	states := d.podStates()
	p, err := states.Load(id)
	if err != nil {
		return err
	}
	ref := d.sandboxName(id)
	if p != nil && p.SandboxID != "" {
		ref = p.SandboxID
	}
	sb, err := d.sandbox(ctx, ref)
	var sandboxID, netns string
	switch {
	case err == nil && sb.pod == id:
		sandboxID = ref
		if sb.pid > 0 {
			netns = netnsPath(sb.pid)
		}
	case err != nil && !errors.Is(err, driver.ErrNotFound):
		return err
	}
	if err := d.cniDel(ctx, p, sandboxID, netns); err != nil {
		return err
	}
	if sandboxID != "" {
		if err := d.removeContainer(ctx, sb.c); err != nil {
			return fmt.Errorf("remove sandbox %s: %w", sandboxID, err)
		}
	}
	return states.Remove(id)
}

// cniDel runs DEL with the network config of the ADD when there is a state, else (a
// sandbox without state: a crash before it was written) with the current config.
func (d *Driver) cniDel(ctx context.Context, p *cni.PodState, sandboxID, netns string) error {
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
	d.log.Info("cni del", "sandbox", sandboxID, "netns", netns, "network", network.Name())
	return network.Del(ctx, sandboxID, netns, ports)
}

// PodIDs lists the pods that have a sandbox or a network state, so an agent can tear
// down the ones it no longer runs. Another cluster's are its agent's.
func (d *Driver) PodIDs(ctx context.Context) ([]string, error) {
	ids, err := d.podStates().IDs()
	if err != nil {
		return nil, err
	}
	infos, err := d.cli.ContainerService().List(d.ctx(ctx), fmt.Sprintf("labels.%q", LabelPod))
	if err != nil {
		return nil, d.wrap(err, "list sandboxes")
	}
	for _, info := range infos {
		if id := info.Labels[LabelPod]; d.owner.Owns(info.Labels) && info.ID == d.sandboxName(id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// sandboxInfo is a pod's sandbox container as found in containerd.
type sandboxInfo struct {
	c   client.Container
	pod string // its pod's ID
	ip  string // the pod's IP, once ADD succeeded
	pid int    // its sleeping process; 0 when its task is not running
}

// sandbox loads the sandbox container named ref; driver.ErrNotFound when there is none
// of the owner's.
func (d *Driver) sandbox(ctx context.Context, ref string) (sandboxInfo, error) {
	if !strings.HasPrefix(ref, d.name(sandboxPrefix)) || identifiers.Validate(ref) != nil {
		return sandboxInfo{}, fmt.Errorf("sandbox %q: %w", ref, driver.ErrNotFound)
	}
	c, err := d.cli.LoadContainer(ctx, ref)
	if err != nil {
		return sandboxInfo{}, d.wrap(err, "sandbox %s", ref)
	}
	labels, err := c.Labels(ctx)
	if err != nil {
		return sandboxInfo{}, d.wrap(err, "sandbox %s", ref)
	}
	if labels[LabelPod] == "" || !d.owner.Owns(labels) {
		return sandboxInfo{}, fmt.Errorf("sandbox %s: %w", ref, driver.ErrNotFound)
	}
	sb := sandboxInfo{c: c, pod: labels[LabelPod], ip: labels[labelIP]}
	task, err := c.Task(ctx, nil)
	if cerrdefs.IsNotFound(err) {
		return sb, nil
	}
	if err != nil {
		return sb, d.wrap(err, "sandbox %s: task", ref)
	}
	st, err := task.Status(ctx)
	if err != nil {
		return sb, d.wrap(err, "sandbox %s: task status", ref)
	}
	if st.Status == client.Running {
		sb.pid = int(task.Pid())
	}
	return sb, nil
}

// removeContainer deletes a container's task (killing it) and the container with its
// snapshot; what is gone already is no error.
func (d *Driver) removeContainer(ctx context.Context, c client.Container) error {
	if task, err := c.Task(ctx, nil); err == nil {
		if _, err := task.Delete(ctx, client.WithProcessKill); err != nil && !cerrdefs.IsNotFound(err) {
			return d.wrap(err, "delete task")
		}
	} else if !cerrdefs.IsNotFound(err) {
		return d.wrap(err, "task")
	}
	if err := c.Delete(ctx, client.WithSnapshotCleanup); err != nil && !cerrdefs.IsNotFound(err) {
		return d.wrap(err, "delete container")
	}
	return nil
}

func netnsPath(pid int) string { return "/proc/" + strconv.Itoa(pid) + "/ns/net" }
