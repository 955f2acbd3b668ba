package stepio

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"
)

// Source is the files of a task that ended, as the collection reads them.
type Source interface {
	// Walk calls fn with a tar header and content for p and, when p is a directory,
	// for every entry below it, parents first; names start with p's base name (as
	// `docker cp` archives them). An error wrapping fs.ErrNotExist says p is missing.
	// fn returning errStopWalk ends the walk without an error.
	Walk(ctx context.Context, p string, fn func(h *tar.Header, r io.Reader) error) error
}

// errStopWalk ends a walk early (a parameter needs only its file).
var errStopWalk = errors.New("stop walk")

// RootSource reads a process task's files below its work dir through an os.Root: a path
// is taken as relative to it, and no symbolic link the task made can lead outside.
type RootSource struct{ Root *os.Root }

// Walk implements Source.
func (s RootSource) Walk(ctx context.Context, p string, fn func(h *tar.Header, r io.Reader) error) error {
	rel, err := cleanRel(p)
	if err != nil {
		return err
	}
	base := path.Base("/" + rel)
	if rel == "." {
		base = "root"
	}
	top, err := s.Root.Stat(".")
	if err != nil {
		return err
	}
	owner := ownerOf(top)
	fi, err := s.Root.Stat(rel) // follows links, inside the root only
	if err != nil {
		return err
	}
	switch {
	case fi.Mode().IsRegular():
		return walkFile(s.Root, rel, base, owner, fn)
	case !fi.IsDir():
		return fmt.Errorf("%s: not a file or a directory", p)
	}
	sub, err := s.Root.OpenRoot(rel)
	if err != nil {
		return err
	}
	defer sub.Close()
	err = fs.WalkDir(sub.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		tname := base
		if name != "." {
			tname = base + "/" + name
		}
		switch typ := d.Type(); {
		case typ.IsDir():
			info, err := d.Info()
			if err != nil {
				return err
			}
			return fn(&tar.Header{Typeflag: tar.TypeDir, Name: tname + "/", Mode: int64(info.Mode().Perm()), ModTime: info.ModTime()}, nil)
		case typ&fs.ModeSymlink != 0:
			target, err := sub.Readlink(name)
			if err != nil {
				return err
			}
			return fn(&tar.Header{Typeflag: tar.TypeSymlink, Name: tname, Linkname: target, Mode: 0o777}, nil)
		case typ.IsRegular():
			return walkFile(sub, name, tname, owner, fn)
		}
		return nil // sockets, fifos, devices: not an artifact's content
	})
	if errors.Is(err, errStopWalk) {
		return nil
	}
	return err
}

// ownerOf is the uid that owns fi.
func ownerOf(fi fs.FileInfo) uint32 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Uid
	}
	return 0
}

// walkFile gives fn the regular file name of root. It is opened without blocking (a
// fifo swapped in meanwhile must not hang the agent) and checked to be a regular file.
// A hard link to a file of another owner than the work dir's (owner, when not root) is
// refused: where fs.protected_hardlinks is 0 a task's user may link any file of the
// filesystem (/etc/shadow) into its work dir, and the agent reads as root.
func walkFile(root *os.Root, name, tname string, owner uint32, fn func(h *tar.Header, r io.Reader) error) error {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", name)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && owner != 0 && st.Nlink > 1 && st.Uid != owner {
		return fmt.Errorf("%s: a hard link to a file of another user (uid %d)", name, st.Uid)
	}
	err = fn(&tar.Header{Typeflag: tar.TypeReg, Name: tname, Size: fi.Size(), Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime()},
		io.LimitReader(f, fi.Size()))
	if errors.Is(err, errStopWalk) {
		return nil
	}
	return err
}

// TarSource reads a container's files from a tar stream its engine makes (the Docker
// Engine API's archive route, which resolves the path inside the container).
type TarSource struct {
	Open func(ctx context.Context, p string) (io.ReadCloser, error)
}

// Walk implements Source.
func (s TarSource) Walk(ctx context.Context, p string, fn func(h *tar.Header, r io.Reader) error) error {
	rc, err := s.Open(ctx, p)
	if err != nil {
		return err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("archive of %s: %w", p, err)
		}
		if err := fn(h, tr); err != nil {
			if errors.Is(err, errStopWalk) {
				return nil
			}
			return err
		}
	}
}
