package docker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/berthhq/berth/internal/driver"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Stop is docker stop: the container's stop signal (SIGTERM unless the image or the
// stop-signal parameter says otherwise), then SIGKILL after max(1 s, grace). Stopping
// an ended container is not an error; an unknown one is driver.ErrNotFound.
func (d *Driver) Stop(ctx context.Context, id string, grace time.Duration) error {
	if err := checkID(id); err != nil {
		return err
	}
	secs := max(1, int(math.Ceil(grace.Seconds())))
	d.stopped.Store(id, true)
	d.log.Info("stopping container", "task", id, "grace", time.Duration(secs)*time.Second)
	err := d.withContainer(ctx, id, func(ref string) error {
		_, err := d.cli.ContainerStop(ctx, ref, client.ContainerStopOptions{Timeout: &secs})
		return err
	})
	if err != nil && !cerrdefs.IsNotModified(err) {
		return d.wrap(err, "stop task %s", id)
	}
	return nil
}

// Remove removes the task's container (forcibly: a task still running is killed) and
// its files. An unknown task is driver.ErrNotFound, after its files are removed.
func (d *Driver) Remove(ctx context.Context, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	err := d.withContainer(ctx, id, func(ref string) error {
		_, err := d.cli.ContainerRemove(ctx, ref, client.ContainerRemoveOptions{Force: true})
		return err
	})
	ferr := os.RemoveAll(d.taskFilesDir(id))
	d.stopped.Delete(id)
	if err != nil && !isRemovalInProgress(err) {
		return d.wrap(err, "remove task %s", id)
	}
	if ferr != nil {
		return fmt.Errorf("remove task %s: files: %w", id, ferr)
	}
	return nil
}

// isRemovalInProgress is Docker's answer when another remove of the same container is
// under way: the container goes either way.
func isRemovalInProgress(err error) bool {
	return cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress")
}

// Signal sends sig to the container's first process (docker kill --signal).
func (d *Driver) Signal(ctx context.Context, id string, sig syscall.Signal) error {
	if err := checkID(id); err != nil {
		return err
	}
	err := d.withContainer(ctx, id, func(ref string) error {
		_, err := d.cli.ContainerKill(ctx, ref, client.ContainerKillOptions{Signal: strconv.Itoa(int(sig))})
		return err
	})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("signal task %s: %w", id, driver.ErrNotFound)
		}
		return fmt.Errorf("signal %d to task %s: %w", sig, id, err)
	}
	return nil
}

// Action is not supported: reload and restart are process actions (BCS's reloadCmd and
// restartCmd); a container is restarted by rescheduling its pod.
func (d *Driver) Action(ctx context.Context, id string, action string) error {
	return fmt.Errorf("task %s: action %q is not supported for containers: %w", id, action, errors.ErrUnsupported)
}
