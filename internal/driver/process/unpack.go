package process

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// unpack puts a package into dest: .tar.gz, .tgz, .tar and .zip are extracted, any other
// file is copied as dest/name (executable, as a package of one program is meant to run).
// Every write goes through the os.Root dest, so no entry (.., absolute, or through a
// symlink) lands outside it; symlinks pointing outside are refused as well. Permission
// bits are kept (not setuid/setgid); with a user, what is written becomes theirs, dest
// itself excepted (fetchAll decides about it).
func unpack(src *os.File, name string, dest *os.Root, cred *credential) error {
	w := &extractor{root: dest, cred: cred}
	lower := strings.ToLower(name)
	switch {
	case strings.HasSuffix(lower, ".tar.gz"), strings.HasSuffix(lower, ".tgz"):
		gz, err := gzip.NewReader(src)
		if err != nil {
			return err
		}
		return w.tar(gz)
	case strings.HasSuffix(lower, ".tar"):
		return w.tar(src)
	case strings.HasSuffix(lower, ".zip"):
		return w.zip(src)
	}
	return w.file(name, src, 0o755)
}

type extractor struct {
	root *os.Root
	cred *credential
}

// entryName validates an archive entry name and makes it relative to the root.
func entryName(raw string) (string, error) {
	name := strings.TrimPrefix(filepath.ToSlash(raw), "./")
	name = strings.TrimSuffix(name, "/")
	if name == "" || name == "." {
		return "", nil
	}
	if !filepath.IsLocal(name) {
		return "", fmt.Errorf("archive entry %q escapes the output directory", raw)
	}
	return filepath.Clean(name), nil
}

func (w *extractor) tar(r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name, err := entryName(hdr.Name)
		if err != nil {
			return err
		}
		if name == "" {
			continue
		}
		perm := hdr.FileInfo().Mode().Perm()
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = w.dir(name, perm)
		case tar.TypeReg, tar.TypeRegA:
			err = w.file(name, tr, perm)
		case tar.TypeSymlink:
			err = w.symlink(name, hdr.Linkname)
		case tar.TypeLink:
			err = w.hardlink(name, hdr.Linkname)
		default:
			// Devices, fifos and the like have no place in a package.
			continue
		}
		if err != nil {
			return err
		}
	}
}

func (w *extractor) zip(src *os.File) error {
	fi, err := src.Stat()
	if err != nil {
		return err
	}
	zr, err := zip.NewReader(src, fi.Size())
	if err != nil {
		return err
	}
	for _, f := range zr.File {
		name, err := entryName(f.Name)
		if err != nil {
			return err
		}
		if name == "" {
			continue
		}
		mode := f.Mode()
		switch {
		case mode.IsDir():
			err = w.dir(name, mode.Perm())
		case mode&fs.ModeSymlink != 0:
			err = w.zipSymlink(name, f)
		case mode.IsRegular():
			perm := mode.Perm()
			if perm == 0 {
				perm = 0o644
			}
			var rc io.ReadCloser
			if rc, err = f.Open(); err == nil {
				err = w.file(name, rc, perm)
				rc.Close()
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *extractor) zipSymlink(name string, f *zip.File) error {
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	target, err := io.ReadAll(io.LimitReader(rc, 4096))
	if err != nil {
		return err
	}
	return w.symlink(name, string(target))
}

func (w *extractor) dir(name string, perm fs.FileMode) error {
	if perm == 0 {
		perm = 0o755
	}
	if err := w.root.MkdirAll(name, perm); err != nil {
		return err
	}
	if err := w.root.Chmod(name, perm); err != nil {
		return err
	}
	return w.chown(name)
}

// parent creates the directories above an entry that the archive does not list, one
// level at a time so that each one created becomes the user's like the entries.
func (w *extractor) parent(name string) error {
	dir := filepath.Dir(name)
	if dir == "." {
		return nil
	}
	if w.cred == nil {
		return w.root.MkdirAll(dir, 0o755)
	}
	p := ""
	for part := range strings.SplitSeq(dir, string(filepath.Separator)) {
		p = filepath.Join(p, part)
		err := w.root.Mkdir(p, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := w.chown(p); err != nil {
			return err
		}
	}
	return nil
}

// file writes a regular file. An existing one is removed first rather than truncated:
// the old version may be a running executable (ETXTBSY) or a symlink.
func (w *extractor) file(name string, r io.Reader, perm fs.FileMode) error {
	if err := w.parent(name); err != nil {
		return err
	}
	w.root.Remove(name)
	f, err := w.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := w.root.Chmod(name, perm); err != nil {
		return err
	}
	return w.chown(name)
}

func (w *extractor) symlink(name, target string) error {
	if filepath.IsAbs(target) || !filepath.IsLocal(filepath.Join(filepath.Dir(name), target)) {
		return fmt.Errorf("archive symlink %q -> %q points outside the output directory", name, target)
	}
	if err := w.parent(name); err != nil {
		return err
	}
	w.root.Remove(name)
	if err := w.root.Symlink(target, name); err != nil {
		return err
	}
	return w.chown(name)
}

func (w *extractor) hardlink(name, target string) error {
	local, err := entryName(target)
	if err != nil || local == "" {
		return fmt.Errorf("archive hard link %q -> %q points outside the output directory", name, target)
	}
	if err := w.parent(name); err != nil {
		return err
	}
	w.root.Remove(name)
	return w.root.Link(local, name)
}

func (w *extractor) chown(name string) error {
	if w.cred == nil {
		return nil
	}
	if err := w.root.Lchown(name, int(w.cred.UID), int(w.cred.GID)); err != nil {
		return fmt.Errorf("chown %s to %s: %w", name, w.cred.Name, err)
	}
	return nil
}
