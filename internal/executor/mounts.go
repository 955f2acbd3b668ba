package executor

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// mountInfo is the mount table the executor reads (a variable so that tests can give
// their own).
var mountInfo = "/proc/self/mountinfo"

// mountsBelow returns the mount points at dir or below it, deepest first, from the
// agent's mount table.
func mountsBelow(dir string) ([]string, error) {
	f, err := os.Open(mountInfo)
	if err != nil {
		return nil, fmt.Errorf("read mounts: %w", err)
	}
	defer f.Close()
	dir = filepath.Clean(dir)
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mounts: %w", err)
	}
	// Deepest first: a mount inside another goes before it.
	slices.SortFunc(out, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return slices.Compact(out), nil
}

// unescapeMount undoes the octal escapes of a mount point in mountinfo (\040 is a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// isMountPoint reports whether dir is a mount point in the agent's mount table.
func isMountPoint(dir string) (bool, error) {
	mps, err := mountsBelow(dir)
	if err != nil {
		return false, err
	}
	return slices.Contains(mps, filepath.Clean(dir)), nil
}

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
