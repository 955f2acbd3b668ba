package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestProcessAsNobodyUnderDev: under `berth dev` whose node lists nobody among its task
// users (--task-users), a process with `user: nobody` starts,
// writes into its work directory through ${workPath} (which renders the real directory
// when workPath is not set), and owns what it writes; other users cannot list the data
// dir, and the etcd data in it stays closed.
func TestProcessAsNobodyUnderDev(t *testing.T) {
	requireRoot(t)
	dataDir := filepath.Join(t.TempDir(), "dev")
	s := startDev(t, dataDir, "--task-users", "nobody")
	defer s.cleanupProcesses("asuser")
	s.applySpec(t, `{"apiVersion":"v4","kind":"process","metadata":{"name":"mine","namespace":"asuser"},
	"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"sleep","user":"nobody",
		"startCmd":"id -un > ${workPath}/who && exec sleep 3600",
		"resources":{"limits":{"cpu":"0.1","memory":"16"}}}]}}}}`)
	s.running(t, "asuser", "mine", 1)

	var who string
	waitUntil(t, 10*time.Second, "the process wrote ${workPath}/who", func() bool {
		files, _ := filepath.Glob(filepath.Join(dataDir, "agent", "pods", "*", "work", "who"))
		if len(files) != 1 {
			return false
		}
		who = files[0]
		return true
	})
	b, err := os.ReadFile(who)
	if err != nil || strings.TrimSpace(string(b)) != "nobody" {
		t.Fatalf("%s: %q %v, want nobody", who, b, err)
	}
	if _, err := os.Stat("/who"); err == nil {
		t.Fatal("${workPath} rendered empty: /who was written on the host")
	}
	st, err := os.Stat(who)
	if err != nil {
		t.Fatal(err)
	}
	if uid := st.Sys().(*syscall.Stat_t).Uid; uid != nobodyUID(t) {
		t.Fatalf("%s is owned by uid %d, want nobody", who, uid)
	}
	for dir, others := range map[string]os.FileMode{dataDir: 0o1, filepath.Join(dataDir, "etcd"): 0} {
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm() & 0o7; got != others {
			t.Errorf("%s: others have %o, want %o", dir, got, others)
		}
	}
}

func nobodyUID(t *testing.T) uint32 {
	t.Helper()
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Split(line, ":"); len(f) > 2 && f[0] == "nobody" {
			return uint32(atoi(f[2]))
		}
	}
	t.Fatal("no user nobody in /etc/passwd")
	return 0
}
