// Package flexvolume runs FlexVolume drivers (Kubernetes' exec volume plugins) for the
// agent's pods (docs/pods.md, "FlexVolume"): a driver installed on the node as
// <plugin dir>/vendor~driver/driver is called with Kubernetes' convention (init; mount
// and unmount, or attach, waitforattach, mountdevice, unmountdevice and detach for a
// driver with the attach capability) and answers with a JSON status. Each mount is
// recorded in the agent's data dir until it is undone, so that the mounts of pods that
// went while the agent was down are undone at its next start.
package flexvolume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/keylock"
	"github.com/berthhq/berth/internal/mountinfo"
	"github.com/berthhq/berth/internal/recorddir"
	"github.com/berthhq/berth/internal/retrysweep"
)

// DefaultPluginDir is where the kubelet finds FlexVolume drivers, and the agent too
// unless told otherwise.
const DefaultPluginDir = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec"

// DefaultTimeout bounds one call of a driver.
const DefaultTimeout = 2 * time.Minute

// Options configure a Manager.
type Options struct {
	// PluginDir holds the drivers (DefaultPluginDir when empty).
	PluginDir string
	// StateDir holds the records of the mounts (required): a directory of the agent's
	// data dir.
	StateDir string
	// NodeName is the node drivers attach volumes to.
	NodeName string
	// Timeout bounds each call of a driver (DefaultTimeout when 0).
	Timeout time.Duration
	// TrustedUID owns the drivers and their directories (0, root, in production; tests
	// running as another user give theirs).
	TrustedUID int
	// SweepInterval is how often Run looks for mounts of pods that are gone (1 min when 0).
	SweepInterval time.Duration
	// Failed, when set, is told of each failed unmount of a pod that is gone: attempt
	// counts from 1, and the next try comes after a growing backoff.
	Failed func(r Record, attempt int, err error)
	Logger *slog.Logger
}

// Manager mounts and unmounts pods' FlexVolume volumes (the executor's FlexVolumes).
type Manager struct {
	opts Options
	log  *slog.Logger

	records recorddir.Dir
	locks   keylock.Locks               // one call at a time per mount dir
	sweeper *retrysweep.Sweeper[Record] // failed unmounts of gone pods, by dir (sweep.go)

	mu   sync.Mutex
	caps map[string]capsEntry // drivers' init answers, by executable
}

// capsEntry is a driver's init answer, valid while its executable is unchanged.
type capsEntry struct {
	mod    time.Time
	size   int64
	attach bool
}

// isMountPoint reports whether dir, its links resolved, is a mount point of the agent.
func isMountPoint(dir string) (bool, error) {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return mountinfo.IsMountPoint(mountinfo.Self, dir)
}

// New returns a Manager; nothing runs until a call or Run.
func New(o Options) (*Manager, error) {
	if o.StateDir == "" {
		return nil, errors.New("flexvolume: no state directory")
	}
	if o.PluginDir == "" {
		o.PluginDir = DefaultPluginDir
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.SweepInterval <= 0 {
		o.SweepInterval = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	m := &Manager{opts: o, log: o.Logger, records: recorddir.Dir{Path: o.StateDir}, caps: map[string]capsEntry{}}
	m.sweeper = retrysweep.New(func(r Record) string { return r.Dir }, m.sweepFailed)
	return m, nil
}

// PluginDir is the directory of the drivers.
func (m *Manager) PluginDir() string { return m.opts.PluginDir }

// Mount mounts volume v of pod ("namespace/name") at dir, which it creates, with the
// data of v's secret. A dir already recorded for the pod and still a mount point is left
// as it is. The record is written before the driver mounts, so that a crash in between
// leaves a record the next start undoes rather than a mount nobody knows of.
func (m *Manager) Mount(ctx context.Context, pod, dir string, v *v4.FlexVolume, secret map[string][]byte) error {
	unlock, err := m.lock(ctx, dir)
	if err != nil {
		return err
	}
	defer unlock()
	if rec, ok, err := m.loadRecord(dir); err != nil {
		return err
	} else if ok {
		mounted, err := isMountPoint(dir)
		if err != nil {
			return err
		}
		switch {
		case mounted && rec.Pod == pod:
			return nil
		case mounted:
			return fmt.Errorf("FlexVolume mount %s: holds a volume of pod %s", dir, rec.Pod)
		}
		if err := m.teardown(ctx, rec); err != nil { // a crash mid-mount: detach what was attached
			return err
		}
	}
	path, err := m.resolve(v.Driver)
	if err != nil {
		return err
	}
	attach, err := m.capabilities(ctx, v.Driver, path)
	if err != nil {
		return err
	}
	opts, err := optionsJSON(pod, v, secret)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("FlexVolume mount %s: %w", dir, err)
	}
	// The driver mounts at dir as root: a link put there would carry the mount elsewhere.
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("FlexVolume mount %s: not a directory (a link?)", dir)
	}
	rec := Record{Pod: pod, Dir: dir, Driver: v.Driver, Mounted: time.Now().UTC()}
	if err := m.saveRecord(rec); err != nil {
		return err
	}
	if attach {
		err = m.attachAndMount(ctx, &rec, path, opts)
	} else {
		_, err = m.call(ctx, v.Driver, path, "mount", dir, opts)
	}
	if err != nil {
		if terr := m.teardown(context.WithoutCancel(ctx), rec); terr != nil {
			m.log.Error("cannot undo a failed FlexVolume mount; its record stays for a retry", "dir", dir, "driver", v.Driver, "err", terr)
		}
		return fmt.Errorf("mount volume at %s: %w", dir, err)
	}
	m.log.Info("FlexVolume mounted", "pod", pod, "dir", dir, "driver", v.Driver, "device", rec.Device)
	return nil
}

// attachAndMount is the flow of a driver with the attach capability: attach, wait for
// the device, mount it at the pod's dir. The record notes the device once attached, so
// that it is detached even after a crash. A step the driver does not support is skipped
// (mountdevice falls back to mount).
func (m *Manager) attachAndMount(ctx context.Context, rec *Record, path, opts string) error {
	r, err := m.call(ctx, rec.Driver, path, "attach", opts, m.opts.NodeName)
	if err != nil && !errors.Is(err, ErrNotSupported) {
		return err
	}
	if err == nil {
		rec.Attached, rec.Device = true, r.Device
		if err := m.saveRecord(*rec); err != nil {
			return err
		}
	}
	r, err = m.call(ctx, rec.Driver, path, "waitforattach", rec.Device, opts)
	switch {
	case err == nil && r.Device != "":
		rec.Device = r.Device
		if err := m.saveRecord(*rec); err != nil {
			return err
		}
	case err != nil && !errors.Is(err, ErrNotSupported):
		return err
	}
	_, err = m.call(ctx, rec.Driver, path, "mountdevice", rec.Dir, rec.Device, opts)
	if errors.Is(err, ErrNotSupported) {
		_, err = m.call(ctx, rec.Driver, path, "mount", rec.Dir, opts)
	}
	return err
}

// Unmount unmounts dir and forgets it; a dir that is not mounted and has no record is no
// error. On failure the record stays, and Run tries again once the pod is gone.
func (m *Manager) Unmount(ctx context.Context, pod, dir string, v *v4.FlexVolume) error {
	unlock, err := m.lock(ctx, dir)
	if err != nil {
		return err
	}
	defer unlock()
	rec, ok, err := m.loadRecord(dir)
	if err != nil {
		return err
	}
	if !ok {
		rec = Record{Pod: pod, Dir: dir}
		if v != nil {
			rec.Driver = v.Driver
		}
	}
	if err := m.teardown(ctx, rec); err != nil {
		return fmt.Errorf("unmount volume at %s: %w", dir, err)
	}
	return nil
}
