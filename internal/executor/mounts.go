package executor

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/berthhq/berth/internal/mountinfo"
)

// mountInfo is the mount table the executor reads (a variable so that tests can give
// their own).
var mountInfo = mountinfo.Self

// mountsBelow returns the mount points at dir or below it, deepest first, from the
// agent's mount table.
func mountsBelow(dir string) ([]string, error) { return mountinfo.Below(mountInfo, dir) }

// isMountPoint reports whether dir is a mount point in the agent's mount table.
func isMountPoint(dir string) (bool, error) { return mountinfo.IsMountPoint(mountInfo, dir) }

// unmountBelow detaches every mount at dir or below it, deepest first (a tmpfs of a
// Memory emptyDir, a FlexVolume whose pod is gone), and checks that none is left: what
// removes the directory next must never reach through a mount point into what it holds
// (a FlexVolume's remote disk, a host directory).
func unmountBelow(dir string) error {
	mps, err := mountsBelow(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, mp := range mps {
		// MNT_DETACH: a task that still holds a file open in it does not keep the pod's
		// directory from going; the kernel frees the mount once it is let go.
		if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", mp, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	left, err := mountsBelow(dir)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("%s is still mounted: the directory is kept", left[0])
	}
	return nil
}
