package docker

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// Inspect returns the task's container info (BCS's BcsContainerInfo) from docker
// inspect; driver.ErrNotFound when the owner has no container of the task (owner.go).
func (d *Driver) Inspect(ctx context.Context, id string) (driver.State, error) {
	if err := checkID(id); err != nil {
		return driver.State{}, err
	}
	c, err := d.find(ctx, id)
	if err != nil {
		return driver.State{}, err
	}
	// Docker records the kernel's OOM kill from an event of its own, which on a busy node
	// may come after the exit it caused: a container with a memory limit just killed
	// (137), not by Stop, is looked at again for a moment, so the end is reported as an
	// OOM kill.
	_, stopping := d.stopped.Load(id)
	for deadline := time.Now().Add(oomFlagWait); !stopping && maybeLateOOM(c) && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return d.toState(ctx, id, c), nil
		case <-time.After(50 * time.Millisecond):
		}
		again, err := d.inspect(ctx, c.ID)
		if err != nil {
			break
		}
		c = again
	}
	return d.toState(ctx, id, c), nil
}

// oomFlagWait bounds how long Inspect waits for Docker's OOM flag after a kill.
const oomFlagWait = 2 * time.Second

// maybeLateOOM reports a container with a memory limit killed (137) in the last seconds
// without Docker's OOM flag (yet).
func maybeLateOOM(c container.InspectResponse) bool {
	s := c.State
	if s == nil || s.Running || s.OOMKilled || s.ExitCode != 137 || c.HostConfig == nil || c.HostConfig.Memory == 0 {
		return false
	}
	return time.Since(parseTime(s.FinishedAt)) < oomFlagWait
}

// List returns every task container berth created for the driver's owner (found by its
// labels, running or ended), for an agent that restarted to adopt them; other clusters'
// and nodes' are not listed (owner.go). Sandboxes are not tasks and are not listed.
func (d *Driver) List(ctx context.Context) ([]driver.State, error) {
	list, err := d.listLabelled(ctx, LabelID)
	if err != nil {
		return nil, d.wrap(err, "list containers")
	}
	var out []driver.State
	for _, s := range list {
		if !d.owner.Owns(s.Labels) {
			continue
		}
		id := s.Labels[LabelID]
		c, err := d.inspect(ctx, s.ID)
		if cerrdefs.IsNotFound(err) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, d.wrap(err, "inspect task %s", id)
		}
		out = append(out, d.toState(ctx, id, c))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// inspect is docker inspect of one container (by name or ID).
func (d *Driver) inspect(ctx context.Context, ref string) (container.InspectResponse, error) {
	res, err := d.cli.ContainerInspect(ctx, ref, client.ContainerInspectOptions{})
	return res.Container, err
}

// listLabelled lists every container carrying label, running or ended.
func (d *Driver) listLabelled(ctx context.Context, label string) ([]container.Summary, error) {
	res, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", label)})
	return res.Items, err
}

// toState turns docker inspect into the driver's state. Running is true while the
// container runs or is paused (BCS counts both as running).
func (d *Driver) toState(ctx context.Context, id string, c container.InspectResponse) driver.State {
	info := v4.ContainerInfo{ID: c.ID, Name: strings.TrimPrefix(c.Name, "/")}
	st := driver.State{ID: id, Info: info}
	if c.Config != nil {
		st.Labels = c.Config.Labels
		st.Info.Hostname = c.Config.Hostname
	}
	if s := c.State; s != nil {
		st.Running = s.Running || s.Paused
		st.Info.Status = string(s.Status)
		st.Info.Pid = s.Pid
		st.Info.ExitCode = s.ExitCode
		st.Info.OOMKilled = s.OOMKilled
		st.Info.Message = s.Error
		st.Info.StartAt = parseTime(s.StartedAt)
		if !st.Running {
			st.Info.FinishAt = parseTime(s.FinishedAt)
		}
	}
	if c.HostConfig != nil {
		mode := c.HostConfig.NetworkMode
		st.Info.NetworkMode = string(mode)
		if mode.IsContainer() {
			st.Info.NetworkMode = "user" // as BCS reports a joined container
			st.Info.IPAddress = d.joinedIP(ctx, mode.ConnectedContainer())
		} else {
			st.Info.IPAddress = containerIP(c)
		}
	}
	return st
}

// joinedIP is the IP of the container whose network a container shares: its bridge
// or user network IP, or for a CNI sandbox the IP CNI gave the pod.
func (d *Driver) joinedIP(ctx context.Context, ref string) string {
	c, err := d.inspect(ctx, ref)
	if err != nil {
		return ""
	}
	if c.Config != nil && c.Config.Labels[LabelPod] != "" {
		if p, err := d.loadPod(c.Config.Labels[LabelPod]); err == nil && p != nil {
			return p.IP
		}
		return ""
	}
	return containerIP(c)
}

// containerIP is the container's address on the network it is attached to (the
// bridge or its user network); empty for host and none.
func containerIP(c container.InspectResponse) string {
	ns := c.NetworkSettings
	if ns == nil {
		return ""
	}
	if c.HostConfig != nil {
		if ep := ns.Networks[string(c.HostConfig.NetworkMode)]; ep != nil && ep.IPAddress.IsValid() {
			return ep.IPAddress.String()
		}
	}
	names := make([]string, 0, len(ns.Networks))
	for n := range ns.Networks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if ep := ns.Networks[n]; ep != nil && ep.IPAddress.IsValid() {
			return ep.IPAddress.String()
		}
	}
	return ""
}

// parseTime reads Docker's RFC 3339 times; Docker writes year 1 for "never".
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() <= 1 {
		return time.Time{}
	}
	return t
}

// stateString describes a container's state for an error message.
func stateString(s *container.State) string {
	if s == nil {
		return "unknown"
	}
	if s.Running {
		return string(s.Status)
	}
	return fmt.Sprintf("%s, exit code %d%s", s.Status, s.ExitCode, suffix(s.Error))
}
