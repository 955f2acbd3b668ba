package mountinfo

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func writeTable(t *testing.T, lines string) string {
	t.Helper()
	table := filepath.Join(t.TempDir(), "mountinfo")
	if err := os.WriteFile(table, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	return table
}

const table = "22 1 0:21 / / rw shared:1 - ext4 /dev/root rw\n" +
	"40 22 0:40 / /d/pods/a/volumes/x rw - ext4 /dev/root rw\n" +
	"41 22 0:41 / /d/pods/a/volumes/x\\040y rw master:3 - ext4 /dev/root rw\n" +
	"43 40 0:43 / /d/pods/a/volumes/x/in rw - tmpfs tmpfs rw\n" +
	"44 40 0:44 / /d/pods/a/volumes/x/in rw - tmpfs tmpfs rw\n" +
	"42 22 0:42 / /d/pods/ab rw shared:7 master:2 - ext4 /dev/root rw\n" +
	"short line\n"

func TestBelow(t *testing.T) {
	path := writeTable(t, table)
	for _, tc := range []struct {
		dir  string
		want []string
	}{
		{"/d/pods/a/", []string{"/d/pods/a/volumes/x/in", "/d/pods/a/volumes/x", "/d/pods/a/volumes/x y"}},
		{"/d/pods/ab", []string{"/d/pods/ab"}},
		{"/d/pods/abc", nil},
		{"/", []string{"/d/pods/a/volumes/x/in", "/d/pods/a/volumes/x", "/d/pods/a/volumes/x y", "/d/pods/ab", "/"}},
	} {
		got, err := Below(path, tc.dir)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Below(%q) = %q, %v; want %q", tc.dir, got, err, tc.want)
		}
	}
	if _, err := Below(filepath.Join(t.TempDir(), "none"), "/"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing table: %v", err)
	}
}

func TestIsMountPoint(t *testing.T) {
	path := writeTable(t, table)
	for dir, want := range map[string]bool{"/d/pods/ab": true, "/d/pods/ab/": true, "/d/pods/a/volumes/x y": true,
		"/d/pods/a": false, "/d/pods/a/volumes/x\\040y": false} {
		if got, err := IsMountPoint(path, dir); err != nil || got != want {
			t.Errorf("IsMountPoint(%q) = %v, %v; want %v", dir, got, err, want)
		}
	}
}

func TestScanOptional(t *testing.T) {
	var shared []string
	err := Scan(writeTable(t, table), func(m Mount) bool {
		if m.Shared() {
			shared = append(shared, m.Point)
		}
		return true
	})
	if err != nil || !slices.Equal(shared, []string{"/", "/d/pods/ab"}) {
		t.Errorf("shared mounts %q, %v", shared, err)
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/x\134y`: `/x\y`, `/end\04`: `/end\04`,
		`/t\011\012`: "/t\t\n", `/big\777`: `/big\777`, `/hex\04a`: `/hex\04a`, `\`: `\`} {
		if got := Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzUnescape(f *testing.F) {
	f.Add(`/a\040b\134`)
	f.Fuzz(func(t *testing.T, s string) {
		if got := Unescape(s); len(got) > len(s) {
			t.Errorf("Unescape(%q) = %q grew", s, got)
		}
	})
}

// The process's own table reads, and its root is a mount point.
func TestSelf(t *testing.T) {
	if _, err := os.Stat(Self); err != nil {
		t.Skip("no mount table:", err)
	}
	if ok, err := IsMountPoint(Self, "/"); err != nil || !ok {
		t.Errorf("IsMountPoint(/) = %v, %v", ok, err)
	}
}
