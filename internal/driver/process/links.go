package process

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// makeLinks places the task's pod volumes in its work dir (docs/pods.md, "Volumes"): a
// symlink at each link's path to the volume's directory. The path is the tenant's: it is
// resolved in the sandbox and made through an os.Root of its parent, so a link the task
// left on the way (data -> /etc) cannot carry it out; missing parents are made for the
// task's user. Our own link from an earlier start is kept; anything else in its place
// (a file, a directory, another link) is refused, never replaced.
func makeLinks(links []driver.Link, workDir string, sb sandbox, cred *credential) error {
	for _, l := range links {
		if err := makeLink(l, workDir, sb, cred); err != nil {
			return fmt.Errorf("volume %s: %w", l.Path, err)
		}
	}
	return nil
}

func makeLink(l driver.Link, workDir string, sb sandbox, cred *credential) error {
	if l.Path == "" || filepath.IsAbs(l.Path) || v4.HasDotDot(l.Path) || !filepath.IsAbs(l.Target) {
		return errors.New("a volume's path must be relative to the work dir, without '..'")
	}
	pl, err := sb.resolve("volume", filepath.Join(workDir, l.Path))
	if err != nil {
		return err
	}
	if filepath.Clean(filepath.Join(workDir, l.Path)) == filepath.Clean(workDir) {
		return errors.New("names the work dir itself")
	}
	dir, err := ensureDir(pl.dir(), cred)
	if err != nil {
		return err
	}
	defer dir.Close()
	if l.Give {
		if err := giveTarget(l.Target, cred); err != nil {
			return err
		}
	}
	return placeLink(dir, filepath.Base(pl.rel), l.Target)
}

// placeLink makes name a link to target in root, unless it is one already.
func placeLink(root *os.Root, name, target string) error {
	fi, err := root.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return root.Symlink(target, name)
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink == 0:
		return errors.New("something that is not berth's link is in its place: it is not replaced")
	}
	cur, err := root.Readlink(name)
	if err != nil {
		return err
	}
	if cur != target {
		return fmt.Errorf("a link to %s is in its place: it is not replaced", cur)
	}
	return nil
}

// giveTarget gives a link's target directory to the task's user (Link.Give): only a
// directory of root's, or the user's own from another task of the group; one that
// another user holds is shared by processes of different users, which the pod's volume
// cannot be.
func giveTarget(target string, cred *credential) error {
	if cred == nil {
		return nil // the agent's own user runs the task, and made the directory
	}
	fi, err := os.Lstat(target)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.IsDir() {
		return errors.New("the volume is not a directory")
	}
	switch st.Uid {
	case cred.UID:
		return nil
	case 0:
		if err := os.Lchown(target, int(cred.UID), int(cred.GID)); err != nil {
			return err
		}
		return os.Chmod(target, 0o700)
	}
	return fmt.Errorf("the volume belongs to uid %d, another process's: processes that share it must run as one user", st.Uid)
}
