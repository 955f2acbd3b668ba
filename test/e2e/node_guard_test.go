package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNodeGuardsItsHost: a process without a user runs under a uid of its task group's own
// (from the agent's range, 80000-89999 by default), which alone can read its secret file
// and its work dir; and a workload the server admits for the management token (a root
// process, a work dir on the host) is refused by a node whose agent does not allow it,
// naming the field and the flag.
func TestNodeGuardsItsHost(t *testing.T) {
	requireRoot(t)
	s := startDev(t, filepath.Join(t.TempDir(), "dev"))
	defer s.cleanupProcesses("guard")
	s.applySpec(t, `{"apiVersion":"v4","kind":"secret","metadata":{"name":"pw","namespace":"guard"},"datas":{"k":{"content":"aHVudGVyMg=="}}}`)
	s.applySpec(t, `{"apiVersion":"v4","kind":"process","metadata":{"name":"plain","namespace":"guard"},
	"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"sleep",
		"startCmd":"id -u > ${workPath}/who && exec sleep 3600",
		"secrets":[{"secretName":"pw","items":[{"type":"file","dataKey":"k","keyOrPath":"${workPath}/pw.txt"}]}],
		"resources":{"limits":{"cpu":"0.1","memory":"16"}}}]}}}}`)
	s.running(t, "guard", "plain", 1)
	var work string
	waitUntil(t, 10*time.Second, "the process wrote ${workPath}/who", func() bool {
		files, _ := filepath.Glob(filepath.Join(s.dataDir, "agent", "pods", "guard.*", "work", "who"))
		if len(files) == 1 {
			work = filepath.Dir(files[0])
		}
		return len(files) == 1
	})
	b, err := os.ReadFile(filepath.Join(work, "who"))
	uid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || uid < 80000 || uid > 89999 {
		t.Fatalf("the process ran as uid %q (%v), want one of the agent's range 80000-89999", b, err)
	}
	for path, mode := range map[string]os.FileMode{filepath.Join(work, "pw.txt"): 0o600, work: 0o700} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if owner := fi.Sys().(*syscall.Stat_t).Uid; int(owner) != uid || fi.Mode().Perm() != mode {
			t.Fatalf("%s: uid %d mode %v, want the task's uid %d and %v", path, owner, fi.Mode().Perm(), uid, mode)
		}
	}

	evilDir := filepath.Join(t.TempDir(), "host-dir")
	for _, c := range []struct{ name, extra, field, flag string }{
		{"rootly", `"user":"root",`, "spec.template.spec.processes[0].user", "--allow-privileged"},
		{"hostdir", `"user":"nobody","workPath":"` + evilDir + `",`, "spec.template.spec.processes[0].workPath", "--host-volumes"},
	} {
		s.applySpec(t, `{"apiVersion":"v4","kind":"process","metadata":{"name":"`+c.name+`","namespace":"guard"},"restartPolicy":{"policy":"Never"},
		"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"sh",`+c.extra+`"startCmd":"touch /root/owned; exec sleep 3600"}]}}}}`)
		tg := s.failedWith(t, "guard", c.name)
		if msg := tg.Status.Message; !strings.Contains(msg, c.field) || !strings.Contains(msg, c.flag) {
			t.Errorf("%s: message %q, want the field %s and %s", c.name, msg, c.field, c.flag)
		}
	}
	if _, err := os.Stat("/root/owned"); err == nil {
		os.Remove("/root/owned")
		t.Fatal("a refused process ran as root")
	}
	if _, err := os.Stat(evilDir); err == nil {
		t.Fatal("the node made a refused work dir on the host")
	}
}
