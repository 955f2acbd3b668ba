package stepio

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// Limits bound what unpacking an archive may write.
type Limits struct {
	// Bytes bounds the content of every file together (a gzip bomb stops there).
	Bytes int64
	// Entries bounds the number of entries.
	Entries int
}

// DefaultLimits bound an input artifact once unpacked.
var DefaultLimits = Limits{Bytes: 8 << 30, Entries: 100_000}

// gzipMagic starts a gzip stream.
var gzipMagic = []byte{0x1f, 0x8b}

// Place writes r at name in root: a gzipped tar (an artifact as the agent stores it) is
// unpacked there (Unpack), anything else is written as one file with mode.
func Place(root *os.Root, name string, r io.Reader, mode fs.FileMode, lim Limits) error {
	br := bufio.NewReader(r)
	head, _ := br.Peek(2)
	if len(head) == 2 && head[0] == gzipMagic[0] && head[1] == gzipMagic[1] {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		// The tar reader reads meta headers (PAX, GNU long names) on its own, as many as
		// come: the decompressed stream is bounded too, not only the files' bytes.
		br := &boundedReader{r: zr, left: lim.Bytes + int64(lim.Entries)*metaBytesPerEntry}
		return Unpack(tar.NewReader(br), root, name, lim)
	}
	return WriteFile(root, name, br, mode, lim.Bytes)
}

// WriteFile writes r as the file name of root (its parents made), at most limit bytes.
func WriteFile(root *os.Root, name string, r io.Reader, mode fs.FileMode, limit int64) error {
	name, err := cleanRel(name)
	if err != nil {
		return err
	}
	if name == "." {
		return errors.New("a file needs a path below the directory it goes in")
	}
	if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
		return err
	}
	return writeIn(root, name, r, mode, &limit)
}

// writeIn writes r to name, counting its bytes against *left.
func writeIn(root *os.Root, name string, r io.Reader, mode fs.FileMode, left *int64) error {
	if mode == 0 {
		mode = 0o644
	}
	// A file left at the name is replaced, never written through: it may be a link.
	if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode&0o777)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(r, *left+1))
	*left -= n
	if err == nil {
		// On the open file, not by name: the umask must not apply, and the name could
		// be swapped for a link meanwhile.
		err = f.Chmod(mode & 0o777)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if *left < 0 {
		return fmt.Errorf("write %s: more than the bound on what an input may write", name)
	}
	return nil
}

// Unpack writes a tar archive at name in root. The archive's first path component is
// the artifact's own name and is replaced by name: a one-file archive becomes the file
// name, a directory's entries go below name. Entries with absolute names or '..',
// links that leave the artifact, devices, fifos and anything past lim are refused;
// every write goes through root, so a link already there cannot carry it out either.
func Unpack(tr *tar.Reader, root *os.Root, name string, lim Limits) error {
	u, err := newUnpacker(root, name, lim)
	if err != nil {
		return err
	}
	entries := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("tar: %w", err)
		}
		// Global headers count: a stream of them must not be read to its end.
		if entries++; entries > lim.Entries {
			return fmt.Errorf("tar: more than %d entries", lim.Entries)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		if err := u.entry(tr, h); err != nil {
			return fmt.Errorf("tar entry %q: %w", truncate(h.Name), err)
		}
	}
	if entries == 0 {
		return errors.New("tar: empty archive")
	}
	return nil
}

// metaBytesPerEntry is what the headers of one entry may take in a tar stream besides
// its content (its header, PAX records of long names, padding): with Limits it bounds
// the decompressed stream.
const metaBytesPerEntry = 16 << 10

// boundedReader fails once more than left bytes were read.
type boundedReader struct {
	r    io.Reader
	left int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errors.New("more than the bound on an input's decompressed bytes")
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// unpacker writes the entries of one artifact at dest in root.
type unpacker struct {
	root *os.Root
	dest string
	left int64
	// dirs are directories below dest checked to be directories, not links: an entry
	// replacing one drops it.
	dirs map[string]bool
}

func newUnpacker(root *os.Root, name string, lim Limits) (*unpacker, error) {
	name, err := cleanRel(name)
	if err != nil {
		return nil, err
	}
	if name != "." {
		if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return nil, err
		}
	}
	return &unpacker{root: root, dest: name, left: lim.Bytes, dirs: map[string]bool{}}, nil
}

// notThroughLink refuses rest (an entry's name below the artifact's top) when one of
// its parents, or itself when last, is a symbolic link. Each link of an archive stays
// inside the artifact when read alone, but links can be chained (s -> ., then s/t ->
// .. is t -> .. at the top): so nothing is written through one.
func (u *unpacker) notThroughLink(rest string, last bool) error {
	if rest == "" {
		return nil
	}
	parts := strings.Split(rest, "/")
	if !last {
		parts = parts[:len(parts)-1]
	}
	p := u.dest
	for _, part := range parts {
		p = path.Join(p, part)
		if u.dirs[p] {
			continue
		}
		fi, err := u.root.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // made below, as directories
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%q is below a symbolic link of the artifact", truncate(rest))
		}
		if fi.IsDir() {
			u.dirs[p] = true
		}
	}
	return nil
}

func (u *unpacker) entry(r io.Reader, h *tar.Header) error {
	rest, err := stripFirst(h.Name)
	if err != nil {
		return err
	}
	target := u.dest
	if rest != "" {
		target = path.Join(u.dest, rest)
	}
	if err := u.notThroughLink(rest, h.Typeflag == tar.TypeDir); err != nil {
		return err
	}
	mode := fs.FileMode(h.Mode) & 0o777 // no setuid, setgid or sticky bits from an archive
	if rest != "" && h.Typeflag != tar.TypeDir {
		// Archives may leave out parent directories.
		if err := u.root.MkdirAll(path.Dir(target), 0o755); err != nil {
			return err
		}
	}
	root := u.root
	switch h.Typeflag {
	case tar.TypeDir:
		if target == "." {
			return nil
		}
		if err := root.MkdirAll(target, 0o755); err != nil {
			return err
		}
		return root.Chmod(target, mode|0o700)
	case tar.TypeReg, tar.TypeRegA:
		if target == "." {
			return errors.New("a file cannot replace the directory it goes in")
		}
		delete(u.dirs, target)
		return writeIn(root, target, r, mode, &u.left)
	case tar.TypeSymlink:
		if rest == "" {
			return errors.New("the artifact itself is a symbolic link")
		}
		if err := linkInside(rest, h.Linkname); err != nil {
			return err
		}
		delete(u.dirs, target)
		if err := root.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return root.Symlink(h.Linkname, target)
	case tar.TypeLink:
		old, err := stripFirst(h.Linkname)
		if err != nil || old == "" || rest == "" {
			return fmt.Errorf("hard link to %q: not an entry of the artifact", truncate(h.Linkname))
		}
		if err := u.notThroughLink(old, false); err != nil {
			return fmt.Errorf("hard link to %q: %w", truncate(h.Linkname), err)
		}
		delete(u.dirs, target)
		if err := root.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return root.Link(path.Join(u.dest, old), target)
	}
	return fmt.Errorf("type %q: only files, directories and links", h.Typeflag)
}

// stripFirst checks an entry's name and drops its first component ("" for the top).
func stripFirst(name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") || strings.ContainsRune(name, 0) {
		return "", errors.New("absolute or empty name")
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", errors.New("a '..' component")
		}
	}
	clean := path.Clean(name)
	if clean == "." {
		return "", errors.New("no name")
	}
	_, rest, _ := strings.Cut(clean, "/")
	return rest, nil
}

// linkInside checks that a symbolic link at rest (relative to the artifact) to target
// stays inside the artifact.
func linkInside(rest, target string) error {
	if target == "" || path.IsAbs(target) {
		return fmt.Errorf("symbolic link to %q: absolute links leave the artifact", truncate(target))
	}
	if j := path.Join(path.Dir(rest), target); j == ".." || strings.HasPrefix(j, "../") {
		return fmt.Errorf("symbolic link to %q: leaves the artifact", truncate(target))
	}
	return nil
}

// cleanRel turns a task's path into a name relative to the root it is resolved in: the
// root stands for the task's "/" (a container) or its work dir (a process).
func cleanRel(p string) (string, error) {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", fmt.Errorf("path %q: a '..' component", truncate(p))
		}
	}
	rel := strings.TrimPrefix(path.Clean("/"+p), "/")
	if rel == "" {
		return ".", nil
	}
	return rel, nil
}

func truncate(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}
