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
