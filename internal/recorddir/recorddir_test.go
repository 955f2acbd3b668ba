package recorddir

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

type rec struct{ Dir string }

// Records are saved, loaded, listed and dropped; a directory not made yet, a record not
// there and a drop of one not there are no errors; unreadable files go to bad.
func TestDir(t *testing.T) {
	d := Dir{Path: filepath.Join(t.TempDir(), "state", "records")}
	var r rec
	if ok, err := d.Load(FileName("/a"), &r); ok || err != nil {
		t.Fatalf("load before any save: %v %v", ok, err)
	}
	if err := d.List(func(string, []byte) bool { t.Error("a record"); return true }, nil); err != nil {
		t.Fatalf("list before any save: %v", err)
	}
	for _, dir := range []string{"/a", "/b"} {
		if err := d.Save(FileName(dir), rec{dir}); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(d.Path); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the directory: %v %v", fi, err)
	}
	if ok, err := d.Load(FileName("/b"), &r); !ok || err != nil || r.Dir != "/b" {
		t.Fatalf("load: %v %v %+v", ok, err, r)
	}
	if err := os.WriteFile(filepath.Join(d.Path, "junk.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.Path, "other.tmp"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ok, err := d.Load("junk.json", &r); ok || err == nil {
		t.Errorf("load of a broken record: %v %v", ok, err)
	}
	var names, bad []string
	err := d.List(func(name string, b []byte) bool {
		if name == "junk.json" {
			return false
		}
		names = append(names, name)
		return true
	}, func(name string, err error) { bad = append(bad, name) })
	slices.Sort(names)
	want := []string{FileName("/a"), FileName("/b")}
	slices.Sort(want)
	if err != nil || !slices.Equal(names, want) || !slices.Equal(bad, []string{"junk.json"}) {
		t.Errorf("list: %v, bad %v, %v", names, bad, err)
	}
	for range 2 {
		if err := d.Drop(FileName("/a")); err != nil {
			t.Fatal(err)
		}
	}
	if ok, _ := d.Load(FileName("/a"), &r); ok {
		t.Error("dropped record still there")
	}
}

func TestMkdirAndNames(t *testing.T) {
	made := ""
	d := Dir{Path: filepath.Join(t.TempDir(), "r"), Mkdir: func(p string) error { made = p; return os.Mkdir(p, 0o750) }}
	if err := d.Save("x.json", 1); err != nil || made != d.Path {
		t.Fatalf("save with Mkdir: %v, made %q", err, made)
	}
	if n := FileName("/a/../b"); n == FileName("/b") || len(n) != 32+len(".json") {
		t.Errorf("FileName hashes the key as given: %q", n)
	}
}
