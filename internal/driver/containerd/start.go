package containerd

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/containerd/api/types/runc/options"
	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	cerrdefs "github.com/containerd/errdefs"

	"github.com/berthhq/berth/internal/driver"
)

// Labels of the container that Inspect, Logs and Stop read back.
const (
	labelLog      = "berth.containerd.log"       // the log's path
	labelLogFiles = "berth.containerd.log-files" // how many files it rotates through
	labelStarted  = "berth.containerd.started"   // when the task started (RFC 3339)
	labelError    = "berth.containerd.error"     // why the task did not start
	labelRuntime  = "berth.containerd.runtime"   // the runtime handler's name
	// stopSignalLabel is where containerd's WithImageStopSignal keeps the image's signal.
	stopSignalLabel = "io.containerd.image.config.stop-signal"
)

// Start creates the task's container berth-<cluster tag>_<id> from its image (pulled
// per its pull policy: image.go), writes its files, and starts its task with its output
// going to LogDir/<name>.log through the logger. It returns once the task runs. A
// container whose task did not start or ended at once is kept with why (Inspect
// reports it), and its state is returned with the error, so the executor can report how
// it ended before removing it.
func (d *Driver) Start(ctx context.Context, t *driver.Task) (driver.State, error) {
	if t.Container == nil {
		return driver.State{}, fmt.Errorf("task %s: not a container task", t.ID)
	}
	t = t.WithSetup()
	if !d.validID(t.ID) {
		return driver.State{}, fmt.Errorf("task %q: invalid ID for a containerd container", t.ID)
	}
	if _, _, err := d.handler(t.Setup.Runtime); err != nil {
		return driver.State{}, fmt.Errorf("start task %s: %w", t.ID, err)
	}
	if !d.starting.Begin(t.ID) {
		return driver.State{}, fmt.Errorf("task %s: already being started", t.ID)
	}
	defer d.starting.End(t.ID)
	ctx = d.ctx(ctx)
	name := d.name(t.ID)
	if _, err := d.cli.ContainerService().Get(ctx, name); err == nil {
		return driver.State{}, fmt.Errorf("task %s: container %s already exists", t.ID, name)
	} else if !cerrdefs.IsNotFound(err) {
		return driver.State{}, d.wrap(err, "start task %s", t.ID)
	}
	c, err := d.create(ctx, t)
	if err != nil {
		os.RemoveAll(d.taskFilesDir(t.ID))
		return driver.State{}, fmt.Errorf("start task %s: %w", t.ID, err)
	}
	d.log.Info("starting container", "task", t.ID, "container", name, "image", t.Container.Image, "network", t.Setup.NetworkMode, "join", t.Setup.JoinTask)
	startErr := d.startTask(ctx, c, t)
	ictx, cancel := background()
	defer cancel()
	if startErr != nil {
		if _, err := c.SetLabels(ictx, map[string]string{labelError: truncate(startErr.Error())}); err != nil {
			d.log.Warn("record a failed start", "task", t.ID, "err", err)
		}
	}
	st, ierr := d.Inspect(ictx, t.ID)
	switch {
	case startErr != nil:
		return st, fmt.Errorf("start task %s (image %s): %w", t.ID, t.Container.Image, startErr)
	case ierr != nil:
		return st, fmt.Errorf("start task %s: %w", t.ID, ierr)
	case !st.Running && !t.RunToEnd:
		return st, fmt.Errorf("start task %s: container %s is %s right after its start (exit code %d, oom killed %v)",
			t.ID, name, st.Info.Status, st.Info.ExitCode, st.Info.OOMKilled)
	}
	return st, nil
}

// create creates the container: image, snapshot, runtime, spec and labels.
func (d *Driver) create(ctx context.Context, t *driver.Task) (client.Container, error) {
	runtime, h, err := d.handler(t.Setup.Runtime)
	if err != nil {
		return nil, err
	}
	img, err := d.image(ctx, t.Container, t.Setup)
	if err != nil {
		return nil, err
	}
	mounts, err := d.mounts(t)
	if err != nil {
		return nil, err
	}
	spec, err := d.specOpts(ctx, t, img, mounts)
	if err != nil {
		return nil, err
	}
	labels := maps.Clone(t.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelID] = t.ID
	labels[labelLog] = d.logPath(t)
	labels[labelLogFiles] = strconv.Itoa(max(d.logLimits.MaxFiles, 1))
	labels[labelRuntime] = runtime
	d.owner.Stamp(labels)
	if spec.cpu.Binds() { // held until the container records its CPUs
		d.cpusetMu.Lock()
		defer d.cpusetMu.Unlock()
	}
	b, err := d.bindCPUs(ctx, t.ID, spec.cpu)
	if err != nil {
		return nil, err
	}
	specOpts := spec.opts
	if b.CPUs != "" {
		specOpts = append(specOpts, oci.WithCPUs(b.CPUs))
		labels[labelCPUSet] = b.CPUs
	}
	if b.Mems != "" {
		specOpts = append(specOpts, oci.WithCPUsMems(b.Mems))
	}
	name := d.name(t.ID)
	c, err := d.cli.NewContainer(ctx, name,
		client.WithImage(img),
		client.WithImageStopSignal(img, "SIGTERM"),
		client.WithSnapshotter(d.snapshotter),
		client.WithNewSnapshot(name, img),
		d.withRuntime(h),
		client.WithNewSpec(specOpts...),
		client.WithAdditionalContainerLabels(labels),
	)
	if err != nil {
		return nil, d.wrap(err, "create container %s", name)
	}
	return c, nil
}

// withRuntime runs the container with handler h: the runc shim running h's binary, or
// h's own shim.
func (d *Driver) withRuntime(h Handler) client.NewContainerOpts {
	if h.Shim != "" {
		return client.WithRuntime(h.Shim, nil)
	}
	return client.WithRuntime(RuntimeRunc, &options.Options{BinaryName: h.Binary, Root: d.runtimeRoot})
}

// startTask creates the container's task with its output going to the logger, and
// starts it. A task that could not be created or started is deleted (the container
// stays, with why).
func (d *Driver) startTask(ctx context.Context, c client.Container, t *driver.Task) error {
	logPath := d.logPath(t)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o711); err != nil {
		return fmt.Errorf("log: %w", err)
	}
	task, err := c.NewTask(ctx, cio.BinaryIO(d.loggerPath, loggerArgs(logPath, d.logLimits)))
	if err != nil {
		return d.wrap(err, "create task")
	}
	if err := task.Start(ctx); err != nil {
		dctx, cancel := background()
		defer cancel()
		if _, derr := task.Delete(dctx, client.WithProcessKill); derr != nil {
			d.log.Warn("delete a task that did not start", "task", t.ID, "err", derr)
		}
		return d.wrap(err, "start task")
	}
	_, err = c.SetLabels(ctx, map[string]string{labelStarted: time.Now().UTC().Format(time.RFC3339Nano)})
	return err
}

// logPath is the task's log: LogDir/<container name>.log, or DataDir's logs/ without a
// LogDir. A name that is not one file name is replaced by the task ID.
func (d *Driver) logPath(t *driver.Task) string {
	name := t.Container.Name
	if name == "" {
		name = t.Name
	}
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		name = t.ID
	}
	dir := t.LogDir
	if dir == "" {
		dir = filepath.Join(filepath.Dir(d.filesDir), "logs")
	}
	return filepath.Join(dir, name+".log")
}

// truncate keeps a message short enough for a label (containerd bounds them at 4 KiB).
func truncate(s string) string {
	const maxLabel = 1024
	if len(s) > maxLabel {
		return s[:maxLabel]
	}
	return s
}
