package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	client "github.com/containerd/containerd/v2/client"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/sys/signal"

	"github.com/berthhq/berth/internal/driver"
)

// load returns task id's container, checked to be the owner's.
func (d *Driver) load(ctx context.Context, id string) (client.Container, error) {
	if err := d.checkID(id); err != nil {
		return nil, err
	}
	c, err := d.cli.LoadContainer(ctx, d.name(id))
	if err != nil {
		return nil, d.wrap(err, "task %s", id)
	}
	labels, err := c.Labels(ctx)
	if err != nil {
		return nil, d.wrap(err, "task %s", id)
	}
	if !d.owner.Owns(labels) || labels[LabelID] != id {
		return nil, fmt.Errorf("task %s: %w", id, driver.ErrNotFound)
	}
	return c, nil
}

// Stop is docker stop: the image's stop signal (SIGTERM unless it says otherwise) to
// the task's first process, then SIGKILL to all of its processes after max(1 s, grace).
// Stopping an ended task is not an error; an unknown one is driver.ErrNotFound.
func (d *Driver) Stop(ctx context.Context, id string, grace time.Duration) error {
	ctx = d.ctx(ctx)
	c, err := d.load(ctx, id)
	if err != nil {
		return err
	}
	// Recorded first: the SIGKILL that may follow is berth's, not an OOM kill.
	labels, err := c.SetLabels(ctx, map[string]string{LabelStopped: "true"})
	if err != nil {
		return d.wrap(err, "stop task %s", id)
	}
	task, err := c.Task(ctx, nil)
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return d.wrap(err, "stop task %s", id)
	}
	exited, err := task.Wait(ctx)
	if err != nil {
		return d.wrap(err, "stop task %s", id)
	}
	sig, err := signal.ParseSignal(labels[stopSignalLabel])
	if err != nil {
		sig = syscall.SIGTERM
	}
	grace = max(grace, time.Second)
	d.log.Info("stopping container", "task", id, "signal", sig, "grace", grace)
	if err := task.Kill(ctx, sig); err != nil && !cerrdefs.IsNotFound(err) && !isNotRunning(err) {
		return d.wrap(err, "stop task %s", id)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-exited:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop task %s: %w", id, ctx.Err())
	case <-timer.C:
	}
	if err := task.Kill(ctx, syscall.SIGKILL, client.WithKillAll); err != nil && !cerrdefs.IsNotFound(err) && !isNotRunning(err) {
		return d.wrap(err, "kill task %s", id)
	}
	select {
	case <-exited:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop task %s: %w", id, ctx.Err())
	}
}

// isNotRunning is the shim's answer to a signal for a process that has ended.
func isNotRunning(err error) bool {
	return cerrdefs.IsFailedPrecondition(err) || errors.Is(err, os.ErrProcessDone)
}

// Remove deletes the task (killing it if it still runs), its container and snapshot,
// and its files. An unknown task is driver.ErrNotFound, after its files are removed.
func (d *Driver) Remove(ctx context.Context, id string) error {
	ctx = d.ctx(ctx)
	c, err := d.load(ctx, id)
	if err != nil {
		if d.validID(id) {
			os.RemoveAll(d.taskFilesDir(id))
		}
		return err
	}
	if err := d.removeContainer(ctx, c); err != nil {
		return fmt.Errorf("remove task %s: %w", id, err)
	}
	if err := os.RemoveAll(d.taskFilesDir(id)); err != nil {
		return fmt.Errorf("remove task %s: files: %w", id, err)
	}
	return nil
}

// Signal sends sig to the task's first process. A task that has ended is an error.
func (d *Driver) Signal(ctx context.Context, id string, sig syscall.Signal) error {
	ctx = d.ctx(ctx)
	c, err := d.load(ctx, id)
	if err != nil {
		return err
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return d.wrap(err, "signal task %s", id)
	}
	if err := task.Kill(ctx, sig); err != nil {
		return d.wrap(err, "signal %d to task %s", sig, id)
	}
	return nil
}

// Action is not supported: reload and restart are process actions; a container is
// restarted by rescheduling its pod.
func (d *Driver) Action(ctx context.Context, id string, action string) error {
	return fmt.Errorf("task %s: action %q is not supported for containers: %w", id, action, errors.ErrUnsupported)
}
