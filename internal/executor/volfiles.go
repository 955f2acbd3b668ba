package executor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"github.com/berthhq/berth/internal/instvol"
)

// A configMap or secret volume's directory is written the kubelet's way, so that a task
// never sees half of an update:
//
//	..2026_11_30_10_00_00.123456789/   the files of one version
//	..data -> ..2026_11_30_10_00_00.123456789
//	app.conf -> ..data/app.conf       one link per top-level entry
//
// An update writes a new timestamped directory, renames a new link over ..data (one
// rename: the switch is atomic), then drops the links of entries that went and the old
// directory. The directory is the agent's (root, 0755), so a task cannot plant a link in
// it, and every access goes through an os.Root of it all the same.

// dataLink is the link to the current version.
const dataLink = "..data"

// volFile is one file of a configMap or secret volume: its path in the volume (checked
// at admission: relative, clean, without "..") and its content and mode.
type volFile struct {
	path    string
	content []byte
	mode    fs.FileMode
}

// writeVolumeFiles writes files as the new version of the volume at dir, giving each to
// owner when known.
func writeVolumeFiles(dir string, files []volFile, owner instvol.Owner) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("volume directory: %w", err)
	}
	defer root.Close()
	old, _ := root.Readlink(dataLink)
	version := ".." + time.Now().UTC().Format("2006_01_02_15_04_05.000000000")
	if err := root.Mkdir(version, 0o755); err != nil {
		return fmt.Errorf("volume version: %w", err)
	}
	if err := writeVersion(root, version, files, owner); err != nil {
		_ = root.RemoveAll(version)
		return err
	}
	tmp := dataLink + "_tmp"
	_ = root.Remove(tmp) // left by a crash between the two steps
	if err := root.Symlink(version, tmp); err != nil {
		_ = root.RemoveAll(version)
		return fmt.Errorf("volume link: %w", err)
	}
	if err := root.Rename(tmp, dataLink); err != nil {
		_ = root.RemoveAll(version)
		return fmt.Errorf("volume link: %w", err)
	}
	if err := linkTopLevel(root, files); err != nil {
		return err
	}
	if old != "" && old != version && isVersionName(old) {
		if err := root.RemoveAll(old); err != nil {
			return fmt.Errorf("remove old volume version: %w", err)
		}
	}
	return nil
}

// writeVersion writes the files into the new version's directory.
func writeVersion(root *os.Root, version string, files []volFile, owner instvol.Owner) error {
	for _, f := range files {
		name := path.Join(version, f.path)
		if dir := path.Dir(name); dir != version {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("volume file %s: %w", f.path, err)
			}
		}
		if err := writeVolumeFile(root, name, f, owner); err != nil {
			return fmt.Errorf("volume file %s: %w", f.path, err)
		}
	}
	return nil
}

func writeVolumeFile(root *os.Root, name string, f volFile, owner instvol.Owner) error {
	out, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = out.Write(f.content)
	if err == nil && owner.Known {
		err = out.Chown(owner.UID, owner.GID)
	}
	if err == nil {
		err = out.Chmod(f.mode) // after the chown, which may clear bits; and beyond the umask
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// linkTopLevel makes a link name -> ..data/name for each top-level entry of files, and
// removes the links of entries the new version no longer has. Anything else in the
// directory is left alone.
func linkTopLevel(root *os.Root, files []volFile) error {
	want := map[string]bool{}
	for _, f := range files {
		top, _, _ := strings.Cut(f.path, "/")
		want[top] = true
	}
	for top := range want {
		target := dataLink + "/" + top
		if cur, err := root.Readlink(top); err == nil && cur == target {
			continue
		}
		if err := root.Symlink(target, top); err != nil {
			return fmt.Errorf("volume link %s: %w", top, err)
		}
	}
	d, err := root.Open(".")
	if err != nil {
		return fmt.Errorf("volume directory: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("volume directory: %w", err)
	}
	var errs []error
	for _, n := range names {
		if want[n] || strings.HasPrefix(n, "..") {
			continue
		}
		if cur, err := root.Readlink(n); err == nil && strings.HasPrefix(cur, dataLink+"/") {
			if err := root.Remove(n); err != nil {
				errs = append(errs, fmt.Errorf("volume link %s: %w", n, err))
			}
		}
	}
	return errors.Join(errs...)
}

// isVersionName reports whether a ..data target is one of ours: "..<timestamp>", in the
// directory itself.
func isVersionName(s string) bool {
	return strings.HasPrefix(s, "..") && s != dataLink && !strings.Contains(s, "/") && len(s) > 2
}
