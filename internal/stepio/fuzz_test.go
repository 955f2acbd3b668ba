package stepio

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzPlace unpacks hostile archives: nothing may be written outside the artifact, and
// every link left inside must stay inside the root.
func FuzzPlace(f *testing.F) {
	seed := func(entries ...*tar.Header) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		for _, h := range entries {
			tw.WriteHeader(h)
			if h.Typeflag == tar.TypeReg {
				tw.Write(make([]byte, h.Size))
			}
		}
		tw.Close()
		zw.Close()
		return buf.Bytes()
	}
	f.Add(seed(&tar.Header{Name: "a/", Typeflag: tar.TypeDir, Mode: 0o755}, &tar.Header{Name: "a/b", Typeflag: tar.TypeReg, Size: 3, Mode: 0o644}))
	f.Add(seed(&tar.Header{Name: "a/l", Typeflag: tar.TypeSymlink, Linkname: "../../x"}, &tar.Header{Name: "a/l/y", Typeflag: tar.TypeReg, Size: 1}))
	f.Add(seed(&tar.Header{Name: "../x", Typeflag: tar.TypeReg, Size: 1}))
	f.Add(seed(&tar.Header{Name: "a/h", Typeflag: tar.TypeLink, Linkname: "/etc/passwd"}))
	f.Add(seed(&tar.Header{Name: "a/s", Typeflag: tar.TypeSymlink, Linkname: "."}, &tar.Header{Name: "a/s/t", Typeflag: tar.TypeSymlink, Linkname: ".."},
		&tar.Header{Name: "a/t/x", Typeflag: tar.TypeReg, Size: 1}))
	f.Add([]byte("plain bytes"))
	f.Add([]byte{0x1f, 0x8b, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		parent := t.TempDir()
		dir := filepath.Join(parent, "root")
		os.Mkdir(dir, 0o755)
		root, err := os.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		Place(root, "in", bytes.NewReader(data), 0, Limits{Bytes: 1 << 20, Entries: 1000}) //nolint:errcheck // any outcome but an escape is fine
		if ents, _ := os.ReadDir(parent); len(ents) != 1 {
			t.Fatalf("wrote beside the root: %v", ents)
		}
		if ents, _ := os.ReadDir(dir); len(ents) > 1 || len(ents) == 1 && ents[0].Name() != "in" {
			t.Fatalf("wrote beside the artifact: %v", ents)
		}
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if d != nil && d.Type()&os.ModeSymlink != 0 {
				target, _ := os.Readlink(p)
				rel, _ := filepath.Rel(dir, filepath.Join(filepath.Dir(p), target))
				if filepath.IsAbs(target) || rel == ".." || strings.HasPrefix(rel, "../") {
					t.Fatalf("link %s -> %s leaves the root", p, target)
				}
			}
			return nil
		})
	})
}

// FuzzTreeSizes reads hostile git ls-tree output: any outcome but a panic is fine, and
// an accepted tree is within the bounds.
func FuzzTreeSizes(f *testing.F) {
	f.Add([]byte("100644 blob 3b18e512dba79e4c8300dd08aeb37f8e728b8dad 15\thello.txt\x00160000 commit 0000 -\tsub\x00"))
	f.Add([]byte("100644 blob x 99999999999999999999\ta\x00"))
	f.Add([]byte("100644 blob x -5\ta\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		treeSizes(bytes.NewReader(data), Limits{Bytes: 1000, Entries: 10}) //nolint:errcheck // no panic is the check
	})
}
