package flexvolume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
)

// driverPart is one half of "vendor/driver", as api/v4 validates it: checked again here,
// since the name becomes a path the agent runs as root.
var driverPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// ErrNoDriver is a driver that is not installed on the node.
var ErrNoDriver = errors.New("no such FlexVolume driver on this node")

// splitDriver splits "vendor/driver".
func splitDriver(name string) (vendor, drv string, err error) {
	vendor, drv, ok := strings.Cut(name, "/")
	for _, p := range []string{vendor, drv} {
		if !ok || !driverPart.MatchString(p) || p == "." || p == ".." {
			return "", "", fmt.Errorf("FlexVolume driver %q: not \"vendor/driver\"", name)
		}
	}
	return vendor, drv, nil
}

// resolve returns the executable of driver name under the plugin dir:
// <dir>/vendor~driver/driver, after checking that only its trusted owner can change
// what runs. The agent runs drivers as root, so a driver some user could write, or one
// in a directory some user could write (where the file or a symlink could be swapped),
// would be a root escalation. Symlinks are followed: one inside the plugin dir was put
// there by its owner, since nobody else may write there, and its target passes the same
// checks.
func (m *Manager) resolve(name string) (string, error) {
	vendor, drv, err := splitDriver(name)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(m.opts.PluginDir, vendor+"~"+drv)
	p := filepath.Join(dir, drv)
	for _, d := range []string{m.opts.PluginDir, dir} {
		if err := m.trustedDir(d); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("FlexVolume driver %s: %w (no %s)", name, ErrNoDriver, p)
			}
			return "", fmt.Errorf("FlexVolume driver %s: %w", name, err)
		}
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("FlexVolume driver %s: %w (no %s)", name, ErrNoDriver, p)
		}
		return "", fmt.Errorf("FlexVolume driver %s: %w", name, err)
	}
	if real != p {
		if err := m.trustedDir(filepath.Dir(real)); err != nil {
			return "", fmt.Errorf("FlexVolume driver %s: %s links to %s: %w", name, p, real, err)
		}
	}
	if err := m.trustedExecutable(real); err != nil {
		return "", fmt.Errorf("FlexVolume driver %s: %w", name, err)
	}
	return real, nil
}

// trustedDir checks that a directory is owned by the trusted owner and writable by
// nobody else.
func (m *Manager) trustedDir(d string) error {
	fi, err := os.Stat(d)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", d)
	}
	return m.trustedOwner(d, fi)
}

// trustedExecutable checks that p is a regular executable file of the trusted owner that
// nobody else may write.
func (m *Manager) trustedExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", p)
	}
	if fi.Mode().Perm()&0o100 == 0 {
		return fmt.Errorf("%s is not executable by its owner", p)
	}
	return m.trustedOwner(p, fi)
}

// trustedOwner refuses a file or directory not owned by the trusted owner (root) or
// writable by its group or by everyone.
func (m *Manager) trustedOwner(p string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: cannot read its owner", p)
	}
	if int(st.Uid) != m.opts.TrustedUID {
		return fmt.Errorf("%s is owned by uid %d, not %d: the agent runs drivers as root and runs only root's", p, st.Uid, m.opts.TrustedUID)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is writable by its group or by everyone (mode %v): the agent runs drivers as root and refuses what others could change", p, fi.Mode().Perm())
	}
	return nil
}

// Drivers lists the drivers installed in the plugin dir that pass the checks, as
// "vendor/driver", sorted.
func (m *Manager) Drivers() []string {
	entries, err := os.ReadDir(m.opts.PluginDir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		vendor, drv, ok := strings.Cut(e.Name(), "~")
		if !ok {
			continue
		}
		name := vendor + "/" + drv
		if _, err := m.resolve(name); err == nil {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
