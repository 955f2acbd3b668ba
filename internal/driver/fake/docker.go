package fake

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// InteractiveFunc answers an ExecInteractive.
type InteractiveFunc func(ctx context.Context, id string, cmd []string, tty bool, stdin io.Reader, stdout io.Writer, resize <-chan v4.TermSize) (int, error)

// Docker is a fake container driver: the fake Driver plus pod networks (CNI sandboxes)
// and interactive exec, with Docker's network rules. A container in a network of its
// own gets an IP (172.17.0.x); one that joins another must find it running (the first
// container of a pod died: the join fails); a sandbox can be joined while it exists.
type Docker struct {
	*Driver

	nmu         sync.Mutex
	nextIP      int
	podIP       string
	sandboxes   map[string]bool // sandbox IDs that exist
	setups      []SetupCall
	teardowns   []string
	failSetup   error
	interactive InteractiveFunc
	bridgeCNI   bool
}

// SetupCall is one SetupPod as the executor made it.
type SetupCall struct {
	ID     string
	Labels map[string]string
	Ports  []driver.PortBinding
}

var (
	_ driver.PodNetworks    = (*Docker)(nil)
	_ driver.Interactive    = (*Docker)(nil)
	_ driver.NetworkHolders = (*Docker)(nil)
	_ driver.CNIBridge      = (*Docker)(nil)
)

// SetBridgeThroughCNI makes the fake serve BRIDGE pods through pod networks, as the
// containerd driver does (driver.CNIBridge).
func (d *Docker) SetBridgeThroughCNI(on bool) {
	d.nmu.Lock()
	defer d.nmu.Unlock()
	d.bridgeCNI = on
}

// BridgeThroughCNI reports what SetBridgeThroughCNI set (false by default, as Docker).
func (d *Docker) BridgeThroughCNI() bool {
	d.nmu.Lock()
	defer d.nmu.Unlock()
	return d.bridgeCNI
}

// HolderImage is the image of a pod's network holder.
func (d *Docker) HolderImage(context.Context) (string, error) { return "fake/pod-sandbox:1", nil }

// NewDocker returns an empty fake container driver named "docker"; pods get podIP.
func NewDocker(podIP string) *Docker {
	d := &Docker{Driver: New("docker"), nextIP: 1, podIP: podIP, sandboxes: map[string]bool{}}
	d.check = d.checkJoin
	return d
}

// checkJoin refuses to join a network whose owner does not run, as Docker does.
func (d *Docker) checkJoin(t *driver.Task) error {
	if t.Setup.JoinTask == "" {
		return nil
	}
	d.nmu.Lock()
	sandbox := d.sandboxes[t.Setup.JoinTask]
	d.nmu.Unlock()
	if !sandbox && !d.Running(t.Setup.JoinTask) {
		return fmt.Errorf("start %s: cannot join the network of %s: it is not running", t.ID, t.Setup.JoinTask)
	}
	return nil
}

// Start starts the task as the fake Driver does, refusing to join a network whose owner
// does not run, and gives a container with a network of its own an IP.
func (d *Docker) Start(ctx context.Context, t *driver.Task) (driver.State, error) {
	t = t.WithSetup()
	st, err := d.Driver.Start(ctx, t)
	if err != nil || t.Setup.JoinTask != "" || t.Setup.NetworkMode == "" || strings.EqualFold(t.Setup.NetworkMode, "HOST") || strings.EqualFold(t.Setup.NetworkMode, "NONE") {
		return st, err
	}
	d.nmu.Lock()
	d.nextIP++
	ip := fmt.Sprintf("172.17.0.%d", d.nextIP)
	d.nmu.Unlock()
	d.setIP(t.ID, ip)
	st.Info.IPAddress = ip
	return st, nil
}

func (d *Docker) setIP(id, ip string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if tk, ok := d.tasks[id]; ok {
		tk.state.Info.IPAddress = ip
	}
}

// FailNextSetup makes the next SetupPod fail with err.
func (d *Docker) FailNextSetup(err error) {
	d.nmu.Lock()
	defer d.nmu.Unlock()
	d.failSetup = err
}

// SetupPod records the call and creates the sandbox "sandbox-<id>" with the pod IP.
func (d *Docker) SetupPod(ctx context.Context, id string, labels map[string]string, ports []driver.PortBinding) (string, string, error) {
	d.nmu.Lock()
	defer d.nmu.Unlock()
	d.setups = append(d.setups, SetupCall{ID: id, Labels: labels, Ports: slices.Clone(ports)})
	if err := d.failSetup; err != nil {
		d.failSetup = nil
		return "", "", err
	}
	d.sandboxes["sandbox-"+id] = true
	return "sandbox-" + id, d.podIP, nil
}

// TeardownPod records the call and removes the sandbox (gone already is fine).
func (d *Docker) TeardownPod(ctx context.Context, id string) error {
	d.nmu.Lock()
	defer d.nmu.Unlock()
	d.teardowns = append(d.teardowns, id)
	delete(d.sandboxes, "sandbox-"+id)
	return nil
}

// Setups returns every SetupPod call in order.
func (d *Docker) Setups() []SetupCall {
	d.nmu.Lock()
	defer d.nmu.Unlock()
	return slices.Clone(d.setups)
}

// Teardowns returns the pod IDs of every TeardownPod call in order.
func (d *Docker) Teardowns() []string {
	d.nmu.Lock()
	defer d.nmu.Unlock()
	return slices.Clone(d.teardowns)
}

// Sandbox reports whether the sandbox of pod id exists.
func (d *Docker) Sandbox(id string) bool {
	d.nmu.Lock()
	defer d.nmu.Unlock()
	return d.sandboxes["sandbox-"+id]
}

// PodIDs lists the pods that have a sandbox, as the Docker driver's PodIDs.
func (d *Docker) PodIDs(ctx context.Context) ([]string, error) {
	d.nmu.Lock()
	defer d.nmu.Unlock()
	var out []string
	for s := range d.sandboxes {
		out = append(out, strings.TrimPrefix(s, "sandbox-"))
	}
	slices.Sort(out)
	return out, nil
}

// SetInteractive makes ExecInteractive call fn.
func (d *Docker) SetInteractive(fn InteractiveFunc) {
	d.nmu.Lock()
	defer d.nmu.Unlock()
	d.interactive = fn
}

// ExecInteractive calls the function set with SetInteractive; without one it echoes: it
// writes the command line, then copies stdin to stdout, and exits 0.
func (d *Docker) ExecInteractive(ctx context.Context, id string, cmd []string, tty bool, stdin io.Reader, stdout io.Writer, resize <-chan v4.TermSize) (int, error) {
	if !d.Running(id) {
		return 0, fmt.Errorf("exec in %s: %w", id, driver.ErrNotFound)
	}
	d.nmu.Lock()
	fn := d.interactive
	d.nmu.Unlock()
	if fn != nil {
		return fn(ctx, id, cmd, tty, stdin, stdout, resize)
	}
	if _, err := fmt.Fprintln(stdout, strings.Join(cmd, " ")); err != nil {
		return 0, err
	}
	if stdin != nil {
		if _, err := io.Copy(stdout, stdin); err != nil {
			return 0, fmt.Errorf("exec in %s: %w", id, err)
		}
	}
	return 0, nil
}
