package flexvolume

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const okDriver = "#!/bin/sh\necho '{\"status\":\"Success\"}'\n"

// A driver anyone but its owner could change, or one that is no plain executable, is
// never run: the agent runs drivers as root.
func TestUnsafeDriversRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, m *Manager, exe string)
		want  string
	}{
		{"group-writable driver", func(t *testing.T, m *Manager, exe string) { chmod(t, exe, 0o775) }, "writable by its group or by everyone"},
		{"world-writable driver", func(t *testing.T, m *Manager, exe string) { chmod(t, exe, 0o757) }, "writable by its group or by everyone"},
		{"world-writable driver dir", func(t *testing.T, m *Manager, exe string) { chmod(t, filepath.Dir(exe), 0o777) }, "writable by its group or by everyone"},
		{"group-writable plugin dir", func(t *testing.T, m *Manager, exe string) { chmod(t, m.opts.PluginDir, 0o770) }, "writable by its group or by everyone"},
		{"not executable", func(t *testing.T, m *Manager, exe string) { chmod(t, exe, 0o644) }, "not executable"},
		{"a directory", func(t *testing.T, m *Manager, exe string) {
			must(t, os.Remove(exe))
			must(t, os.Mkdir(exe, 0o755))
		}, "not a regular file"},
		{"symlink to a writable place", func(t *testing.T, m *Manager, exe string) {
			open := t.TempDir()
			chmod(t, open, 0o777)
			target := filepath.Join(open, "drv")
			must(t, os.WriteFile(target, []byte(okDriver), 0o755))
			must(t, os.Remove(exe))
			must(t, os.Symlink(target, exe))
		}, "links to"},
		{"other owner", func(t *testing.T, m *Manager, exe string) {
			if os.Getuid() != 0 {
				t.Skip("chown needs root")
			}
			must(t, os.Chown(exe, 1000, 1000))
		}, "owned by uid 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestManager(t, time.Minute)
			installDriver(t, m, "acme/nfs", okDriver)
			tc.setup(t, m, filepath.Join(m.opts.PluginDir, "acme~nfs", "nfs"))
			err := m.Mount(ctxT(t), "ns/p", filepath.Join(t.TempDir(), "vol"), flex("acme/nfs", nil), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "acme/nfs") {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
			if slices.Contains(m.Drivers(), "acme/nfs") {
				t.Fatal("an unsafe driver is listed")
			}
		})
	}
}

// A symlink the plugin dir's owner put there, to a safe place, is followed.
func TestDriverSymlinkOfTheOwner(t *testing.T) {
	m := newTestManager(t, time.Minute)
	installDriver(t, m, "acme/nfs", okDriver)
	safe := t.TempDir()
	must(t, os.WriteFile(filepath.Join(safe, "nfs-driver"), []byte(okDriver), 0o755))
	exe := filepath.Join(m.opts.PluginDir, "acme~nfs", "nfs")
	must(t, os.Remove(exe))
	must(t, os.Symlink(filepath.Join(safe, "nfs-driver"), exe))
	if err := m.Mount(ctxT(t), "ns/p", filepath.Join(t.TempDir(), "vol"), flex("acme/nfs", nil), nil); err != nil {
		t.Fatal(err)
	}
}

// Names that would leave the plugin dir never become a path, and a missing driver says so.
func TestDriverNames(t *testing.T) {
	m := newTestManager(t, time.Minute)
	installDriver(t, m, "acme/nfs", okDriver)
	installDriver(t, m, "b.io/fuse", okDriver)
	for _, name := range []string{"../x", "acme/..", "acme", "/bin/sh", "acme/nfs/x", "acme~nfs/nfs", ""} {
		if _, err := m.resolve(name); err == nil || !strings.Contains(err.Error(), "not \"vendor/driver\"") {
			t.Errorf("%q: got %v", name, err)
		}
	}
	if _, err := m.resolve("acme/cifs"); !errors.Is(err, ErrNoDriver) {
		t.Errorf("missing driver: got %v", err)
	}
	if got := m.Drivers(); !slices.Equal(got, []string{"acme/nfs", "b.io/fuse"}) {
		t.Errorf("Drivers() = %v", got)
	}
}

func chmod(t *testing.T, p string, mode os.FileMode) { t.Helper(); must(t, os.Chmod(p, mode)) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A mount dir that is a link (which a task could have put there) is never mounted on.
func TestMountDirLinkRefused(t *testing.T) {
	m := newTestManager(t, time.Minute)
	calls := installDriver(t, m, "acme/nfs", "#!/bin/sh\necho $1 >> LOG\necho '{\"status\":\"Success\"}'\n")
	dir := filepath.Join(t.TempDir(), "vol")
	must(t, os.Symlink(t.TempDir(), dir))
	err := m.Mount(ctxT(t), "ns/p", dir, flex("acme/nfs", nil), nil)
	if err == nil || !strings.Contains(err.Error(), "not a directory") || strings.Contains(calls(), "mount") {
		t.Fatalf("got %v, calls %q", err, calls())
	}
}
