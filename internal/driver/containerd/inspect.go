package containerd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	cerrdefs "github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// Inspect returns the task's state from containerd: its container's labels and spec and
// its task's status; driver.ErrNotFound when the owner has no container of the task.
func (d *Driver) Inspect(ctx context.Context, id string) (driver.State, error) {
	if err := d.checkID(id); err != nil {
		return driver.State{}, err
	}
	ctx = d.ctx(ctx)
	info, err := d.cli.ContainerService().Get(ctx, d.name(id))
	if err != nil {
		return driver.State{}, d.wrap(err, "inspect task %s", id)
	}
	if !d.owner.Owns(info.Labels) || info.Labels[LabelID] != id {
		return driver.State{}, fmt.Errorf("inspect task %s: %w", id, driver.ErrNotFound)
	}
	return d.toState(ctx, id, info)
}

// List returns every task container of the driver's owner, running or ended, for an
// agent that restarted to adopt them.
func (d *Driver) List(ctx context.Context) ([]driver.State, error) {
	ctx = d.ctx(ctx)
	infos, err := d.cli.ContainerService().List(ctx, fmt.Sprintf("labels.%q", LabelID))
	if err != nil {
		return nil, d.wrap(err, "list containers")
	}
	var out []driver.State
	for _, info := range infos {
		id := info.Labels[LabelID]
		if !d.owner.Owns(info.Labels) || info.ID != d.name(id) {
			continue
		}
		st, err := d.toState(ctx, id, info)
		if errors.Is(err, driver.ErrNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// toState turns a container and its task into the driver's state. A container without
// a task did not start (its labelError says why) or had its task deleted.
func (d *Driver) toState(ctx context.Context, id string, info containers.Container) (driver.State, error) {
	st := driver.State{ID: id, Labels: info.Labels, Info: v4.ContainerInfo{ID: info.ID, Name: info.ID}}
	var spec specs.Spec
	if info.Spec != nil {
		if err := json.Unmarshal(info.Spec.GetValue(), &spec); err != nil {
			return st, fmt.Errorf("inspect task %s: spec: %w", id, err)
		}
		st.Info.Hostname = spec.Hostname
	}
	st.Info.NetworkMode = networkMode(&spec)
	st.Info.IPAddress = info.Labels[labelIP] // the pod's, for a task in a CNI sandbox
	st.Info.StartAt = parseTime(info.Labels[labelStarted])
	c, err := d.cli.LoadContainer(ctx, info.ID)
	if err != nil {
		return st, d.wrap(err, "inspect task %s", id)
	}
	task, err := c.Task(ctx, nil)
	if cerrdefs.IsNotFound(err) {
		st.Info.Status, st.Info.ExitCode = "exited", -1
		st.Info.Message = info.Labels[labelError]
		if st.Info.Message == "" {
			st.Info.Status, st.Info.ExitCode = "created", 0
		}
		return st, nil
	}
	if err != nil {
		return st, d.wrap(err, "inspect task %s", id)
	}
	status, err := task.Status(ctx)
	if err != nil {
		return st, d.wrap(err, "inspect task %s: status", id)
	}
	st.Info.Pid = int(task.Pid())
	switch status.Status {
	case client.Running, client.Paused, client.Pausing:
		st.Running = true
		st.Info.Status = "running"
	case client.Created:
		st.Running = true // between NewTask and Start (our own Start holds it)
		st.Info.Status = "created"
	default:
		st.Info.Status = "exited"
		st.Info.Pid = 0
		st.Info.ExitCode = int(status.ExitStatus)
		st.Info.FinishAt = status.ExitTime
		st.Info.OOMKilled = st.Info.ExitCode == 128+int(syscall.SIGKILL) && info.Labels[LabelStopped] == "" && oomKilled(&spec)
	}
	return st, nil
}

// networkMode names the container's network as BCS reports it: host, user (a joined
// network) or none.
func networkMode(s *specs.Spec) string {
	if s.Linux == nil {
		return ""
	}
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == specs.NetworkNamespace {
			if ns.Path != "" {
				return "user"
			}
			return "none"
		}
	}
	return "host"
}

// oomKilled reads the kernel's OOM kill count of the container's memory cgroup, which
// stays until the task is deleted: containerd keeps no OOM flag, and its OOM event is
// missed while the agent is away. cgroup v1 has it in memory.oom_control, v2 in
// memory.events.
func oomKilled(s *specs.Spec) bool {
	if s.Linux == nil || s.Linux.CgroupsPath == "" || s.Linux.Resources == nil || s.Linux.Resources.Memory == nil || s.Linux.Resources.Memory.Limit == nil {
		return false
	}
	p := filepath.Clean("/" + s.Linux.CgroupsPath)
	for _, f := range []string{
		filepath.Join("/sys/fs/cgroup/memory", p, "memory.oom_control"),
		filepath.Join("/sys/fs/cgroup", p, "memory.events"),
	} {
		if n, ok := readCounter(f, "oom_kill"); ok {
			return n > 0
		}
	}
	return false
}

// readCounter returns the value of key in a flat-keyed cgroup file.
func readCounter(path, key string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// taskPID is the host PID of a running task's first process.
func (d *Driver) taskPID(ctx context.Context, id string) (int, error) {
	st, err := d.Inspect(ctx, id)
	if err != nil {
		return 0, err
	}
	if !st.Running || st.Info.Pid <= 0 {
		return 0, fmt.Errorf("task %s is not running", id)
	}
	return st.Info.Pid, nil
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}
