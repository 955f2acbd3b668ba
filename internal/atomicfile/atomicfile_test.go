package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for _, c := range []struct {
		data string
		mode os.FileMode
	}{{"one", 0o600}, {"two, longer", 0o644}} {
		if err := Write(path, []byte(c.data), c.mode); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		fi, _ := os.Stat(path)
		if err != nil || string(got) != c.data || fi.Mode().Perm() != c.mode {
			t.Fatalf("after writing %q: %q %v %v", c.data, got, fi.Mode(), err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
	// A write that cannot happen is an error, not a silent loss.
	if err := Write(filepath.Join(dir, "missing-dir", "x"), []byte("{}"), 0o600); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}

// WriteIn writes inside its root only, runs prepare on the new file, and leaves no
// temporary file behind, whether the write succeeds or prepare fails.
func TestWriteIn(t *testing.T) {
	base := t.TempDir()
	if err := os.Mkdir(filepath.Join(base, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(base)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	prepared := 0
	prepare := func(f *os.File) error { prepared++; return nil }
	if err := WriteIn(root, "conf/app.conf", []byte("port=1"), 0o640, prepare); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(base, "conf", "app.conf"))
	fi, _ := os.Stat(filepath.Join(base, "conf", "app.conf"))
	if err != nil || string(got) != "port=1" || fi.Mode().Perm() != 0o640 || prepared != 1 {
		t.Fatalf("%q %v %v, prepared %d", got, fi.Mode(), err, prepared)
	}
	if err := WriteIn(root, "../escape", []byte("x"), 0o600, nil); err == nil {
		t.Fatal("a write outside the root succeeded")
	}
	failing := func(*os.File) error { return os.ErrPermission }
	if err := WriteIn(root, "conf/app.conf", []byte("port=2"), 0o640, failing); err == nil {
		t.Fatal("a failed prepare did not fail the write")
	}
	if got, _ := os.ReadFile(filepath.Join(base, "conf", "app.conf")); string(got) != "port=1" {
		t.Fatalf("a failed write changed the file: %q", got)
	}
	if entries, _ := os.ReadDir(filepath.Join(base, "conf")); len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
}
