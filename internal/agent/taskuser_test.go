package agent

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

// The path to a data dir must be searchable by the default user: its own directories by
// their owner bit, its group's by the group bit, others' by the others bit.
func TestUnreachableBy(t *testing.T) {
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to give directories to another user")
	}
	base := t.TempDir()
	for p := base; p != os.TempDir(); p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(name string, mode os.FileMode, uid int) string {
		dir := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, uid, 0); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	var nobodyUID int
	fmt.Sscan(nobody.Uid, &nobodyUID)
	for _, c := range []struct {
		name   string
		mode   os.FileMode
		uid    int
		closed bool
	}{
		{"open", 0o755, 0, false},
		{"search only", 0o711, 0, false},
		{"closed", 0o700, 0, true},
		{"its own", 0o700, nobodyUID, false},
		{"its own, no search", 0o600, nobodyUID, true},
	} {
		dir := mk(strings.ReplaceAll(c.name, " ", "-"), c.mode, c.uid)
		got := unreachableBy(uint64(nobodyUID), nil, filepath.Join(dir, "data"))
		if c.closed && got != dir || !c.closed && got != "" {
			t.Errorf("%s: unreachableBy = %q", c.name, got)
		}
	}
}

func commandExists(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}
