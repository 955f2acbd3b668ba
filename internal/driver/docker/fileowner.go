package docker

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/moby/client"
)

// A task's configmap and secret files belong to the user the container runs as, and only
// that user may read them (0600, 0400 read-only), as a process task's do: another user of
// the image cannot read a secret mounted for its main process. So does a vcuda share's
// socket (0660, driver.ContainerSetup.OwnedFiles), which only that user may call. The user is the container's
// as Docker resolves it (the user parameter, else the image's USER), looked up in the
// image's own /etc/passwd and /etc/group. With user-namespace remapping on, uids inside
// differ from the host's; the files are then readable by all (0644, 0444), as the
// container's root could not read them otherwise.

// passwdMax bounds the /etc/passwd or /etc/group read from an image.
const passwdMax = 1 << 20

// ownFiles gives the task's files (the host paths of its file mounts, written 0600 or
// 0400 by root) to the container's user. A user berth cannot resolve is left to Docker,
// which refuses to start the container with its own message; the files stay root's.
func (d *Driver) ownFiles(ctx context.Context, containerID string, files []string) error {
	if len(files) == 0 {
		return nil
	}
	remapped, err := d.usernsRemap(ctx)
	if err != nil {
		return err
	}
	ci, err := d.inspect(ctx, containerID)
	if err != nil {
		return d.wrap(err, "inspect container %s", containerID)
	}
	if remapped && (ci.HostConfig == nil || !ci.HostConfig.UsernsMode.IsHost()) {
		return eachFile(files, func(f string, mode os.FileMode) error { return os.Chmod(f, openToAll(mode)) })
	}
	user := ""
	if ci.Config != nil {
		user = ci.Config.User
	}
	uid, gid, err := resolveUser(user, func(p string) (io.Reader, error) { return d.readContainerFile(ctx, containerID, p) })
	if err != nil {
		d.log.Warn("files stay root's: the container's user is unknown", "container", containerID, "user", user, "err", err)
		return nil
	}
	return eachFile(files, func(f string, _ os.FileMode) error {
		if err := os.Lchown(f, uid, gid); err != nil {
			return fmt.Errorf("give file %s to uid %d: %w", f, uid, err)
		}
		return nil
	})
}

// openToAll is the mode that lets every user of a remapped container use a file of
// mode m: read a file; read and write a socket (connecting to one needs write).
func openToAll(m os.FileMode) os.FileMode {
	if m&os.ModeSocket != 0 {
		return m.Perm() | 0o066
	}
	return m.Perm() | 0o044
}

// eachFile calls fn with each file and its mode (type and permission bits).
func eachFile(files []string, fn func(string, os.FileMode) error) error {
	for _, f := range files {
		fi, err := os.Lstat(f)
		if err != nil {
			return err
		}
		if err := fn(f, fi.Mode()); err != nil {
			return err
		}
	}
	return nil
}

// usernsRemap reports whether the daemon remaps user namespaces (asked once).
func (d *Driver) usernsRemap(ctx context.Context) (bool, error) {
	d.remapMu.Lock()
	defer d.remapMu.Unlock()
	if d.remapKnown {
		return d.remap, nil
	}
	res, err := d.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return false, d.wrap(err, "docker info")
	}
	d.remap = slices.ContainsFunc(res.Info.SecurityOptions, func(o string) bool { return strings.Contains(o, "name=userns") })
	d.remapKnown = true
	return d.remap, nil
}

// readContainerFile reads a file of a created container's file system, up to passwdMax.
func (d *Driver) readContainerFile(ctx context.Context, containerID, path string) (io.Reader, error) {
	res, err := d.cli.CopyFromContainer(ctx, containerID, client.CopyFromContainerOptions{SourcePath: path})
	if err != nil {
		return nil, err
	}
	defer res.Content.Close()
	tr := tar.NewReader(res.Content)
	if _, err := tr.Next(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	b, err := io.ReadAll(io.LimitReader(tr, passwdMax))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return strings.NewReader(string(b)), nil
}

// resolveUser turns Docker's user ("", "name", "uid", "name:group", "uid:gid") into a uid
// and gid as runc does: names from the image's /etc/passwd and /etc/group (read with
// open), a numeric user without a passwd entry in group 0, and root for "".
func resolveUser(spec string, open func(path string) (io.Reader, error)) (int, int, error) {
	name, group, hasGroup := strings.Cut(spec, ":")
	if name == "" && !hasGroup {
		return 0, 0, nil
	}
	uid, gid := 0, 0
	entry, found, err := lookupEntry(open, "/etc/passwd", name)
	if n, ok := parseID(name); ok {
		uid = n
		if found {
			gid, _ = parseID(entry[3])
		}
	} else {
		if err != nil {
			return 0, 0, err
		}
		if !found {
			return 0, 0, fmt.Errorf("no user %q in the image's /etc/passwd", name)
		}
		uid, _ = parseID(entry[2])
		gid, _ = parseID(entry[3])
	}
	if !hasGroup || group == "" {
		return uid, gid, nil
	}
	if n, ok := parseID(group); ok {
		return uid, n, nil
	}
	g, found, err := lookupEntry(open, "/etc/group", group)
	if err != nil {
		return 0, 0, err
	}
	if !found {
		return 0, 0, fmt.Errorf("no group %q in the image's /etc/group", group)
	}
	gid, _ = parseID(g[2])
	return uid, gid, nil
}

// parseID parses a uid or gid: a decimal number of 32 bits.
func parseID(s string) (int, bool) {
	n, err := strconv.ParseUint(s, 10, 32)
	return int(n), err == nil
}

// lookupEntry finds the line of /etc/passwd or /etc/group whose name (first field) is
// key, or whose id (third field) is key when key is a number. Lines with too few fields
// or a non-numeric id are skipped, as libc does.
func lookupEntry(open func(string) (io.Reader, error), path, key string) ([]string, bool, error) {
	r, err := open(path)
	if err != nil {
		return nil, false, fmt.Errorf("read the image's %s: %w", path, err)
	}
	minFields := 3
	if path == "/etc/passwd" {
		minFields = 4
	}
	_, numeric := parseID(key)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) < minFields || strings.HasPrefix(f[0], "#") {
			continue
		}
		if _, ok := parseID(f[2]); !ok {
			continue
		}
		if f[0] == key || numeric && f[2] == key {
			return f, true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, false, errors.Join(fmt.Errorf("read the image's %s", path), err)
	}
	return nil, false, nil
}
