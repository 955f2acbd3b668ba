package process

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/berthhq/berth/internal/driver"
)

// A process's volume link is made in its work dir, kept when it is already ours, and
// never replaces what the task put there nor leaves the work dir through a link the
// task planted on the way.
func TestMakeLinks(t *testing.T) {
	base := t.TempDir()
	work := filepath.Join(base, "work")
	vol := filepath.Join(base, "volumes", "cache")
	outside := filepath.Join(base, "etc")
	for _, d := range []string{work, vol, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sb := podBox(work)
	ok := []driver.Link{{Path: "cache", Target: vol}, {Path: "deep/er/cache", Target: vol}}
	if err := makeLinks(ok, work, sb, nil); err != nil {
		t.Fatal(err)
	}
	if err := makeLinks(ok, work, sb, nil); err != nil { // a second start keeps them
		t.Fatalf("again: %v", err)
	}
	for _, l := range ok {
		if got, _ := os.Readlink(filepath.Join(work, l.Path)); got != vol {
			t.Errorf("%s links to %q", l.Path, got)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(work, "planted")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/somewhere", filepath.Join(work, "other")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		link driver.Link
		msg  string
	}{
		{driver.Link{Path: "file", Target: vol}, "not berth's link"},
		{driver.Link{Path: "other", Target: vol}, "a link to /somewhere"},
		{driver.Link{Path: "planted/x", Target: vol}, ""}, // through the task's link: os.Root refuses
		{driver.Link{Path: "../escape", Target: vol}, "relative to the work dir"},
		{driver.Link{Path: "/etc/x", Target: vol}, "relative to the work dir"},
		{driver.Link{Path: ".", Target: vol}, "work dir itself"},
	} {
		err := makeLinks([]driver.Link{tc.link}, work, sb, nil)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %v, want ...%s...", tc.link.Path, err, tc.msg)
		}
	}
	if _, err := os.Lstat(filepath.Join(outside, "x")); !os.IsNotExist(err) {
		t.Errorf("a link was made outside the work dir: %v", err)
	}
}

// An emptyDir the executor could not give its user goes to the task's user, once; one
// that another user holds is refused.
func TestGiveTarget(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	vol := filepath.Join(t.TempDir(), "cache")
	if err := os.Mkdir(vol, 0o700); err != nil {
		t.Fatal(err)
	}
	alice := &credential{Name: "berth-80001", UID: 80001, GID: 80001}
	for range 2 { // the second process of the group finds it its own
		if err := giveTarget(vol, alice); err != nil {
			t.Fatal(err)
		}
	}
	fi, _ := os.Stat(vol)
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 80001 || st.Gid != 80001 || fi.Mode().Perm() != 0o700 {
		t.Errorf("volume %v uid %d gid %d", fi.Mode(), st.Uid, st.Gid)
	}
	bob := &credential{Name: "berth-80002", UID: 80002, GID: 80002}
	if err := giveTarget(vol, bob); err == nil || !strings.Contains(err.Error(), "must run as one user") {
		t.Errorf("another user's volume: %v", err)
	}
}
