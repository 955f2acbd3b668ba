// Package atomicfile writes files so that a crash leaves either the old content or the
// new, never a mix: the agent's checkpoint and certificates, the drivers' task and pod
// state, the files injected into tasks, the server's CA, join token files, etcd member
// record and encryption key file.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// Write replaces path with data: a temporary file in the same directory is
// written and synced, renamed over path, and the directory is synced so the rename
// itself survives a crash.
func Write(path string, data []byte, perm fs.FileMode) error {
	return write(osDir{filepath.Dir(path)}, filepath.Base(path), data, perm, nil)
}

// WriteIn is Write for rel inside root (an os.Root: rel cannot leave it, through ".." or
// a symbolic link), whose directory must exist. prepare, when not nil, runs on the
// temporary file before it is synced (to give it an owner, say).
func WriteIn(root *os.Root, rel string, data []byte, perm fs.FileMode, prepare func(*os.File) error) error {
	return write(rootDir{root, filepath.Dir(rel)}, filepath.Base(rel), data, perm, prepare)
}

// dir is where a file is written: a plain directory or one inside an os.Root.
type dir interface {
	create(name string) (*os.File, error) // O_EXCL, 0600
	rename(from, to string) error
	remove(name string) error
	open() (*os.File, error) // the directory itself, to sync it
	path(name string) string // for messages
}

func write(d dir, name string, data []byte, perm fs.FileMode, prepare func(*os.File) error) (err error) {
	f, tmp, err := createTemp(d, "."+name+".tmp-")
	if err != nil {
		return fmt.Errorf("write %s: %w", d.path(name), err)
	}
	defer func() {
		if err != nil {
			d.remove(tmp)
		}
	}()
	if _, err = f.Write(data); err == nil {
		err = f.Chmod(perm) // the umask must not apply
	}
	if err == nil && prepare != nil {
		err = prepare(f)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", d.path(tmp), err)
	}
	if err = d.rename(tmp, name); err != nil {
		return fmt.Errorf("write %s: %w", d.path(name), err)
	}
	if df, derr := d.open(); derr == nil {
		derr = df.Sync()
		df.Close()
		if derr != nil {
			return fmt.Errorf("sync the directory of %s: %w", d.path(name), derr)
		}
	}
	return nil
}

// createTemp creates a new file prefix+random in d.
func createTemp(d dir, prefix string) (*os.File, string, error) {
	for range 100 {
		name := prefix + strconv.FormatUint(uint64(rand.Uint32()), 36)
		f, err := d.create(name)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", fmt.Errorf("no free temporary name for %s", d.path(prefix))
}

type osDir struct{ dir string }

func (d osDir) create(name string) (*os.File, error) {
	return os.OpenFile(filepath.Join(d.dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
}
func (d osDir) rename(from, to string) error {
	return os.Rename(filepath.Join(d.dir, from), filepath.Join(d.dir, to))
}
func (d osDir) remove(name string) error { return os.Remove(filepath.Join(d.dir, name)) }
func (d osDir) open() (*os.File, error)  { return os.Open(d.dir) }
func (d osDir) path(name string) string  { return filepath.Join(d.dir, name) }

type rootDir struct {
	root *os.Root
	dir  string // relative to root
}

func (d rootDir) create(name string) (*os.File, error) {
	return d.root.OpenFile(filepath.Join(d.dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
}
func (d rootDir) rename(from, to string) error {
	return d.root.Rename(filepath.Join(d.dir, from), filepath.Join(d.dir, to))
}
func (d rootDir) remove(name string) error { return d.root.Remove(filepath.Join(d.dir, name)) }
func (d rootDir) open() (*os.File, error)  { return d.root.Open(d.dir) }
func (d rootDir) path(name string) string  { return filepath.Join(d.root.Name(), d.dir, name) }
