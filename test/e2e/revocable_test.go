package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// memProc is a process of one instance running cmd (program prog), reserving memMB and
// 0.1 core, of the given tier ("" or revocable).
func memProc(ns, name, tier, prog, cmd string, memMB float64) string {
	sched := ""
	if tier != "" {
		sched = `"tier":"` + tier + `",`
	}
	return fmtSpec(`{"apiVersion":"v4","kind":"process","metadata":{"name":%q,"namespace":%q},
		"restartPolicy":{"policy":"Always"},"killPolicy":{"gracePeriod":2},
		"spec":{%s"instance":1,"template":{"spec":{"processes":[{"procName":%q,"startGracePeriod":1,
			"startCmd":%q,"resources":{"limits":{"cpu":"0.1","memory":"%.0f"}}}]}}}}`, name, ns, sched, prog, cmd, memMB)
}

// Revocable capacity on one node (docs/policy.md, "Revocable capacity"): an owner
// reserves most of the node's memory and uses little; a revocable process far larger
// than what is free runs on the idle reservation, and is evicted when the owner's use
// rises (the memhog helper allocates when its trigger file appears).
func TestRevocable(t *testing.T) {
	requireRoot(t)
	bin := filepath.Join(t.TempDir(), "memhog")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/memhog").CombinedOutput(); err != nil {
		t.Fatalf("build memhog: %v\n%s", err, out)
	}
	passable(t, bin)
	trigger := filepath.Join(t.TempDir(), "grow")
	passable(t, trigger)
	s := startServer(t, t.TempDir())
	startAgent(t, s, "revoc-1", "31850-31899", "--revocable-max-fraction", "0.9", "--revocable-margin", "0.1",
		"--revocable-interval", "1s", "--revocable-evict-interval", "2s")
	const ns = "revoce2e"
	s.cleanupProcesses(ns)
	node := func() v4.Node {
		var n v4.Node
		if err := json.Unmarshal([]byte(s.mustBerth("get", "node", "revoc-1", "-o", "json")), &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	alloc := node().Spec.Allocatable.MemoryMB
	// The owner reserves 80% and uses a few MB: with a margin of 10%, the node lends about
	// 70% and 20% is free, 90% in all; the revocable process takes it less 250 MB, so
	// that the owner's 600 MB more no longer leave it room.
	owner := math.Floor(0.8 * alloc)
	revocable := math.Floor(0.9*alloc) - 64 - 250

	t.Run("an idle reservation is lent", func(t *testing.T) {
		s.applySpec(t, memProc(ns, "owner", "", "memhog", "exec "+bin+" -trigger "+trigger+" -mb 600", owner))
		s.running(t, ns, "owner", 1)
		waitUntil(t, 30*time.Second, "a lending report with the owner measured", func() bool {
			r := node().Status.Revocable
			return r != nil && r.UsedMemoryMB > 0 && r.MaxFraction == 0.9
		})
		s.applySpec(t, memProc(ns, "batch", v4.TierRevocable, "sleep", "exec sleep 3600", revocable))
		got := s.running(t, ns, "batch", 1)[0]
		// The kernel gives the owner the cpu first: batch weighs the least, the owner
		// what its 0.1 core implies (cpu.shares 102, cpu.weight 4).
		b, o := cpuWeight(t, pidOf(got)), cpuWeight(t, pidOf(s.running(t, ns, "owner", 1)[0]))
		if b != "2" && b != "1" || o != "102" && o != "4" {
			t.Errorf("cpu weight: batch %s, owner %s; want 2 (v1) or 1 (v2), and 102 or 4", b, o)
		}
		if !got.Spec.Revocable || got.Spec.Resources.MemoryMB <= alloc-owner {
			t.Errorf("batch: revocable %v, %v MB reserved of %v free", got.Spec.Revocable, got.Spec.Resources.MemoryMB, alloc-owner)
		}
		if out := s.mustBerth("get", "taskgroups", "-n", ns); !strings.Contains(out, "revocable") {
			t.Errorf("get taskgroups does not show the tier:\n%s", out)
		}
	})

	t.Run("evicted when the owner needs it back", func(t *testing.T) {
		tgs := s.taskGroups(ns, "batch")
		if len(tgs) != 1 || tgs[0].Status.Phase != v4.StatusRunning {
			t.Fatalf("batch does not run: %d task groups", len(tgs))
		}
		before := tgs[0]
		if err := os.WriteFile(trigger, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		waitUntil(t, 60*time.Second, "batch evicted", func() bool {
			tg := s.taskGroupOf(ns, "batch", before.Metadata.Name)
			return tg == nil || tg.Status.Phase == v4.StatusFailed && strings.Contains(tg.Status.Message, "evicted")
		})
		t.Logf("batch evicted %v after the owner grew", time.Since(start).Round(time.Millisecond))
		s.eventsSay("Evicted", "-n", ns)
		// The owner runs on; the restarted batch finds no room and waits.
		if st := s.processStatus(ns, "owner"); st.Running != 1 {
			t.Errorf("owner: %+v", st)
		}
		waitUntil(t, 30*time.Second, "batch waits for room", func() bool {
			return s.processStatus(ns, "batch").Running == 0
		})
	})
}

// cpuWeight is the cpu.shares (cgroup v1) or cpu.weight (v2) of the cgroup process pid
// is in.
func cpuWeight(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		file := ""
		switch {
		case len(f) == 3 && slices.Contains(strings.Split(f[1], ","), "cpu"):
			file = filepath.Join("/sys/fs/cgroup/cpu", f[2], "cpu.shares")
		case len(f) == 3 && f[0] == "0" && f[1] == "" && !strings.Contains(string(b), ":cpu"):
			file = filepath.Join("/sys/fs/cgroup", f[2], "cpu.weight")
		default:
			continue
		}
		w, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(w))
	}
	t.Fatalf("no cpu cgroup for pid %d:\n%s", pid, b)
	return ""
}
