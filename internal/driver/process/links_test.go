package process

import (
	"os"
	"path/filepath"
	"strings"
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
