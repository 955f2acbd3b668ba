package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/mountinfo"
)

// flexBindDriver is a FlexVolume driver that bind-mounts its option "source" at the
// volume's dir, and appends each call's name to CALLS.
const flexBindDriver = `#!/bin/sh
op=$1; shift
echo "$op" >> CALLS
case $op in
init) echo '{"status":"Success","capabilities":{"attach":false}}' ;;
mount)
	src=$(printf '%s' "$2" | sed -n 's/.*"source":"\([^"]*\)".*/\1/p')
	mkdir -p "$1"
	if mount --bind "$src" "$1"; then echo '{"status":"Success"}'; else echo '{"status":"Failure","message":"bind mount failed"}'; fi ;;
unmount)
	if umount "$1"; then echo '{"status":"Success"}'; else echo '{"status":"Failure","message":"umount failed"}'; fi ;;
*) echo '{"status":"Not supported"}' ;;
esac
`

// flexNode is an agent with a plugin dir holding flexBindDriver as acme/bind, and the
// directory the driver mounts (holding "hello").
type flexNode struct {
	s           *devServer
	a           *agentProc
	src, calls  string
	flexRecords string
}

// TestFlexVolume runs a real FlexVolume driver through the agent (docs/pods.md,
// "FlexVolume"): the volume is mounted before the process starts, which reads a file of
// the driver's source; it stays mounted across a kill -9 and restart of the agent, which
// adopts the pod; it is unmounted once the workload is deleted.
func TestFlexVolume(t *testing.T) {
	requireRoot(t)
	n := startFlexNode(t)
	t.Run("mounted before the task, kept across an agent restart, unmounted at the end", func(t *testing.T) { flexLifecycle(t, n) })
	t.Run("a driver the node lacks fails the pod naming it", func(t *testing.T) { flexMissingDriver(t, n) })
}

func startFlexNode(t *testing.T) *flexNode {
	t.Helper()
	plugins := t.TempDir() // root's, 0700: the agent runs only root's drivers
	if err := os.MkdirAll(filepath.Join(plugins, "acme~bind"), 0o755); err != nil {
		t.Fatal(err)
	}
	n := &flexNode{src: t.TempDir(), calls: filepath.Join(t.TempDir(), "calls")}
	script := strings.ReplaceAll(flexBindDriver, "CALLS", n.calls)
	if err := os.WriteFile(filepath.Join(plugins, "acme~bind", "bind"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// The task runs as a uid of its own: the volume's root must let it read.
	if err := os.Chmod(n.src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(n.src, "hello"), []byte("from the driver\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n.s = startServer(t, t.TempDir())
	n.a = startAgent(t, n.s, "flex", "29400-29449", "--docker", "off", "--volume-plugin-dir", plugins)
	n.flexRecords = filepath.Join(n.a.dataDir, "flexvolumes")
	n.s.cleanupProcesses("e2e")
	return n
}

// flexProcess is a process whose pod has the flexVolume "data" of driver, linked as
// "data" in its work dir; it copies data/hello into its work dir, then sleeps.
func flexProcess(name, driver, src string) string {
	return fmtSpec(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":"e2e","labels":{"app":%q}},
	"restartPolicy":{"policy":"Never"},"killPolicy":{"gracePeriod":1},
	"spec":{"instance":1,"template":{"spec":{
		"volumes":[{"name":"data","flexVolume":{"driver":%q,"options":{"source":%q}}}],
		"processes":[{"procName":"sleep","startCmd":"cat data/hello > seen; exec sleep 100000","startGracePeriod":1,
			"volumes":[{"volume":{"mountPath":"data","podVolume":"data"}}],
			"resources":{"limits":{"cpu":"0.1","memory":"32"}}}]}}}}`, name, name, driver, src)
}

func flexLifecycle(t *testing.T, n *flexNode) {
	s, a := n.s, n.a
	out := s.berth("", "get", "node", "flex", "-o", "json")
	if !strings.Contains(out.stdout, "flexvolume.drivers") || !strings.Contains(out.stdout, "acme/bind") {
		t.Errorf("the node does not list its driver: %s", out.stdout)
	}
	s.applySpec(t, flexProcess("reader", "acme/bind", n.src))
	s.running(t, "e2e", "reader", 1)
	var seen []string
	waitUntil(t, 30*time.Second, "the task read the volume", func() bool {
		seen, _ = filepath.Glob(filepath.Join(a.dataDir, "pods", "e2e.*", "work", "seen"))
		return len(seen) == 1
	})
	if b, err := os.ReadFile(seen[0]); err != nil || string(b) != "from the driver\n" {
		t.Fatalf("the task saw %q (%v) in its volume", b, err)
	}
	dir := flexRecordDir(t, n.flexRecords)
	if !flexMounted(t, dir) {
		t.Fatalf("%s is not a mount point", dir)
	}

	a.kill()
	restarted := time.Now()
	a.start()
	waitUntil(t, 30*time.Second, "the pod adopted", func() bool {
		tgs := s.taskGroups("e2e", "reader")
		return len(tgs) == 1 && tgs[0].Status.Phase == v4.StatusRunning && tgs[0].Status.Updated.After(restarted)
	})
	if !flexMounted(t, dir) {
		t.Fatal("the volume went with the agent's restart")
	}
	if calls := flexCalls(n.calls); calls != "init\nmount\n" { // one mount, kept: the restart mounts nothing again
		t.Fatalf("driver calls after the restart:\n%s", calls)
	}

	s.mustBerth("delete", "process", "reader", "-n", "e2e")
	waitUntil(t, 60*time.Second, "the task groups to go", func() bool { return len(s.taskGroups("e2e", "reader")) == 0 })
	waitUntil(t, 30*time.Second, "the volume unmounted and forgotten", func() bool {
		recs, _ := os.ReadDir(n.flexRecords)
		return len(recs) == 0 && !flexMounted(t, dir)
	})
	if calls := flexCalls(n.calls); !strings.HasSuffix(calls, "unmount\n") {
		t.Fatalf("driver calls:\n%s", calls)
	}
}

func flexMissingDriver(t *testing.T, n *flexNode) {
	s := n.s
	s.applySpec(t, flexProcess("nodriver", "acme/missing", n.src))
	var msg string
	waitUntil(t, 60*time.Second, "the pod failed", func() bool {
		tgs := s.taskGroups("e2e", "nodriver")
		if len(tgs) == 1 && v4.Terminal(tgs[0].Status.Phase) {
			msg = tgs[0].Status.Message
			return true
		}
		return false
	})
	if !strings.Contains(msg, "acme/missing") {
		t.Errorf("the pod's message %q does not name the driver", msg)
	}
	s.mustBerth("delete", "process", "nodriver", "-n", "e2e")
	waitUntil(t, 60*time.Second, "the task groups to go", func() bool { return len(s.taskGroups("e2e", "nodriver")) == 0 })
}

// flexRecordDir returns the dir of the only FlexVolume record in records.
func flexRecordDir(t *testing.T, records string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(records, "*.json"))
	if len(files) != 1 {
		t.Fatalf("FlexVolume records %v, want one", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var rec struct{ Pod, Dir, Driver string }
	if err := json.Unmarshal(b, &rec); err != nil || rec.Driver != "acme/bind" || !strings.HasPrefix(rec.Pod, "e2e/") {
		t.Fatalf("record %s: %v", b, err)
	}
	return rec.Dir
}

// flexMounted reports whether dir is a mount point of this machine.
func flexMounted(t *testing.T, dir string) bool {
	t.Helper()
	ok, err := mountinfo.IsMountPoint(mountinfo.Self, dir)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func flexCalls(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
