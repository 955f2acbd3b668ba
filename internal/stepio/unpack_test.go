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

// entry is one tar entry of a test archive.
type entry struct {
	name, link, body string
	typ              byte
	mode             int64
}

func tgz(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: e.mode}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func openRoot(t *testing.T) (*os.Root, string) {
	t.Helper()
	dir := t.TempDir()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, dir
}

func TestPlace(t *testing.T) {
	root, dir := openRoot(t)
	lim := DefaultLimits
	// A directory artifact: its top is renamed to the path.
	dirArt := tgz(t, entry{name: "out/", typ: tar.TypeDir, mode: 0o755}, entry{name: "out/a.txt", typ: tar.TypeReg, body: "A"},
		entry{name: "out/sub/b.txt", typ: tar.TypeReg, body: "B", mode: 0o4755}, entry{name: "out/l", typ: tar.TypeSymlink, link: "sub/b.txt"},
		entry{name: "out/h", typ: tar.TypeLink, link: "out/a.txt"})
	if err := Place(root, "/in/data", bytes.NewReader(dirArt), 0, lim); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"in/data/a.txt": "A", "in/data/sub/b.txt": "B", "in/data/l": "B", "in/data/h": "A"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", name, b, err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "in/data/sub/b.txt")); err != nil || fi.Mode()&os.ModeSetuid != 0 {
		t.Errorf("setuid bit kept from an archive: %v %v", fi.Mode(), err)
	}
	// A one-file artifact becomes the file at the path.
	if err := Place(root, "model.bin", bytes.NewReader(tgz(t, entry{name: "m.bin", typ: tar.TypeReg, body: "M"})), 0, lim); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "model.bin")); string(b) != "M" {
		t.Errorf("model.bin: %q", b)
	}
	// Anything else is written as it is, with its mode.
	if err := Place(root, "/run.sh", strings.NewReader("#!/bin/sh\n"), 0o755, lim); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "run.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("run.sh: %v %v", fi, err)
	}
}

// TestUnpackRefuses tries every archive that must not write outside, or past a bound.
func TestUnpackRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []entry
		lim     Limits
		want    string
	}{
		{"dot dot", []entry{{name: "a/../../etc/passwd", typ: tar.TypeReg, body: "x"}}, DefaultLimits, "'..'"},
		{"absolute", []entry{{name: "/etc/passwd", typ: tar.TypeReg, body: "x"}}, DefaultLimits, "absolute"},
		{"absolute symlink", []entry{{name: "a/", typ: tar.TypeDir}, {name: "a/l", typ: tar.TypeSymlink, link: "/etc"}}, DefaultLimits, "absolute links"},
		{"escaping symlink", []entry{{name: "a/", typ: tar.TypeDir}, {name: "a/l", typ: tar.TypeSymlink, link: "../../etc"}}, DefaultLimits, "leaves the artifact"},
		{"symlink then write through it", []entry{{name: "a/", typ: tar.TypeDir}, {name: "a/l", typ: tar.TypeSymlink, link: "x/../.."},
			{name: "a/l/shadow", typ: tar.TypeReg, body: "x"}}, DefaultLimits, "leaves the artifact"},
		{"hard link outside", []entry{{name: "a/", typ: tar.TypeDir}, {name: "a/h", typ: tar.TypeLink, link: "/etc/shadow"}}, DefaultLimits, "not an entry"},
		{"device", []entry{{name: "a/", typ: tar.TypeDir}, {name: "a/sda", typ: tar.TypeBlock}}, DefaultLimits, "only files"},
		{"char device", []entry{{name: "a/", typ: tar.TypeDir}, {name: "a/mem", typ: tar.TypeChar}}, DefaultLimits, "only files"},
		{"fifo", []entry{{name: "a/", typ: tar.TypeDir}, {name: "a/f", typ: tar.TypeFifo}}, DefaultLimits, "only files"},
		{"too many bytes", []entry{{name: "a/", typ: tar.TypeDir}, {name: "a/1", typ: tar.TypeReg, body: "12345"}, {name: "a/2", typ: tar.TypeReg, body: "678"}},
			Limits{Bytes: 6, Entries: 10}, "bound"},
		{"too many entries", []entry{{name: "a/", typ: tar.TypeDir}, {name: "a/1", typ: tar.TypeReg}, {name: "a/2", typ: tar.TypeReg}},
			Limits{Bytes: 100, Entries: 2}, "more than 2 entries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, dir := openRoot(t)
			err := Place(root, "in", bytes.NewReader(tgz(t, tc.entries...)), 0, tc.lim)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
			filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if d != nil && d.Type()&os.ModeSymlink != 0 {
					if target, _ := os.Readlink(p); strings.HasPrefix(target, "/") {
						t.Errorf("absolute link left: %s -> %s", p, target)
					}
				}
				return nil
			})
		})
	}
}

// TestPlaceThroughPlantedLink: a link the task left where an input goes (in -> /etc, or
// in -> /proc/1/root) cannot carry the write outside the root.
func TestPlaceThroughPlantedLink(t *testing.T) {
	outside := t.TempDir()
	for _, target := range []string{outside, "/proc/1/root" + outside, "../../../../../../" + outside} {
		root, dir := openRoot(t)
		if err := os.Symlink(target, filepath.Join(dir, "in")); err != nil {
			t.Fatal(err)
		}
		err1 := Place(root, "in/x", strings.NewReader("pwned"), 0, DefaultLimits)
		err2 := Place(root, "in", bytes.NewReader(tgz(t, entry{name: "a/", typ: tar.TypeDir}, entry{name: "a/x", typ: tar.TypeReg, body: "pwned"})), 0, DefaultLimits)
		if err1 == nil {
			t.Errorf("link to %s: file write not refused", target)
		}
		_ = err2 // a directory at "in" may replace the link; what matters is below
		if ents, _ := os.ReadDir(outside); len(ents) > 0 {
			t.Fatalf("link to %s: wrote outside the root: %v", target, ents)
		}
	}
}
