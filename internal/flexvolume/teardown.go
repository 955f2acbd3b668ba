package flexvolume

import (
	"context"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// teardown undoes rec: unmounts its dir when it is a mount point (unmount, or
// unmountdevice for an attached volume; the agent unmounts itself when the driver does
// not support it), detaches the device of an attached volume, then removes the record
// and the empty dir. It stops at the first failure, keeping the record.
func (m *Manager) teardown(ctx context.Context, rec Record) error {
	mounted, err := isMountPoint(rec.Dir)
	if err != nil {
		return err
	}
	if !mounted && !rec.Attached {
		return m.forget(rec)
	}
	path, rerr := m.resolve(rec.Driver)
	if mounted {
		if err := m.unmountDir(ctx, rec, path, rerr); err != nil {
			return err
		}
	}
	if rec.Attached {
		if rerr != nil {
			return fmt.Errorf("detach %s: %w", rec.Device, rerr)
		}
		_, err := m.call(ctx, rec.Driver, path, "detach", rec.Device, m.opts.NodeName)
		if err != nil && !errors.Is(err, ErrNotSupported) {
			return err
		}
	}
	m.log.Info("FlexVolume unmounted", "pod", rec.Pod, "dir", rec.Dir, "driver", rec.Driver, "device", rec.Device)
	return m.forget(rec)
}

// unmountDir unmounts a mounted dir through its driver, or itself when the driver does
// not support the call or is no longer installed (a plain unmount needs no driver).
func (m *Manager) unmountDir(ctx context.Context, rec Record, path string, resolveErr error) error {
	var err error
	switch {
	case resolveErr != nil && rec.Attached:
		return fmt.Errorf("unmount %s: %w", rec.Dir, resolveErr)
	case resolveErr != nil:
		m.log.Warn("FlexVolume driver unavailable: the agent unmounts the volume itself", "dir", rec.Dir, "err", resolveErr)
		err = ErrNotSupported
	case rec.Attached:
		_, err = m.call(ctx, rec.Driver, path, "unmountdevice", rec.Dir)
	default:
		_, err = m.call(ctx, rec.Driver, path, "unmount", rec.Dir)
	}
	if errors.Is(err, ErrNotSupported) {
		// NOFOLLOW: a link swapped in for the dir must not unmount what it points to.
		if uerr := unix.Unmount(rec.Dir, unix.UMOUNT_NOFOLLOW); uerr != nil && !errors.Is(uerr, unix.EINVAL) {
			return fmt.Errorf("unmount %s: %w", rec.Dir, uerr)
		}
		return nil
	}
	return err
}

// forget removes rec's record and its dir when empty (a dir still mounted, or holding
// files, stays).
func (m *Manager) forget(rec Record) error {
	if err := m.dropRecord(rec.Dir); err != nil {
		return err
	}
	_ = os.Remove(rec.Dir)
	return nil
}

// capabilities calls the driver's init once per version of its executable and reports
// whether it attaches volumes. A driver that does not support init is taken as one that
// does not attach.
func (m *Manager) capabilities(ctx context.Context, name, path string) (bool, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return false, fmt.Errorf("FlexVolume driver %s: %w", name, err)
	}
	m.mu.Lock()
	c, ok := m.caps[path]
	m.mu.Unlock()
	if ok && c.mod.Equal(fi.ModTime()) && c.size == fi.Size() {
		return c.attach, nil
	}
	r, err := m.call(ctx, name, path, "init")
	if err != nil && !errors.Is(err, ErrNotSupported) {
		return false, err
	}
	c = capsEntry{mod: fi.ModTime(), size: fi.Size()}
	if err == nil && r.Capabilities != nil {
		c.attach = r.Capabilities.Attach
	}
	m.mu.Lock()
	m.caps[path] = c
	m.mu.Unlock()
	return c.attach, nil
}

// lock takes dir's lock, or fails when ctx ends first.
func (m *Manager) lock(ctx context.Context, dir string) (func(), error) {
	unlock, err := m.locks.Lock(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("FlexVolume %s: %w", dir, err)
	}
	return unlock, nil
}
