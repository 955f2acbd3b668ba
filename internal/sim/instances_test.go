package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

func tgOf(ns, owner string, index int, name, node, phase string) *v4.TaskGroup {
	tg := &v4.TaskGroup{}
	tg.Metadata.Namespace, tg.Metadata.Name = ns, name
	tg.Spec.Owner = v4.OwnerRef{Kind: v4.KindProcess, Name: owner}
	tg.Spec.Index, tg.Spec.Node, tg.Status.Phase = index, node, phase
	return tg
}

// Every instance of every process exactly once and Running passes; each way of failing
// is counted and named.
func TestCheckInstances(t *testing.T) {
	want := map[ownerKey]int{{"bench-1", "app-0"}: 2, {"bench-1", "app-1"}: 2}
	ok := []*v4.TaskGroup{
		tgOf("bench-1", "app-0", 0, "a0-0", "n1", v4.StatusRunning),
		tgOf("bench-1", "app-0", 1, "a0-1", "n2", v4.StatusRunning),
		tgOf("bench-1", "app-1", 0, "a1-0", "n1", v4.StatusRunning),
		tgOf("bench-1", "app-1", 1, "a1-1", "n2", v4.StatusRunning),
		// Not of the checked processes: left out.
		tgOf("other", "app-0", 5, "x", "n1", v4.StatusStaging),
		// A Lost one whose replacement runs, and one stopped: not live.
		tgOf("bench-1", "app-1", 1, "a1-1-old", "n3", v4.StatusLost),
		tgOf("bench-1", "app-0", 0, "a0-0-old", "n3", v4.StatusKilled),
	}
	if c := checkInstances(ok, want, nil); !c.OK() || c.Expected != 4 || c.Running != 4 {
		t.Fatalf("a sound cluster: %v (%+v)", c, c)
	}

	bad := []*v4.TaskGroup{
		tgOf("bench-1", "app-0", 0, "a0-0", "n1", v4.StatusRunning),
		tgOf("bench-1", "app-0", 0, "a0-0-dup", "n2", v4.StatusRunning), // duplicate index
		// app-0 instance 1 missing
		tgOf("bench-1", "app-1", 0, "a1-0", "n1", v4.StatusStaging), // not Running
		tgOf("bench-1", "app-1", 1, "a1-1", "n2", v4.StatusRunning),
		tgOf("bench-1", "app-1", 2, "a1-2", "n2", v4.StatusRunning), // beyond the count
	}
	c := checkInstances(bad, want, nil)
	if c.OK() || c.Expected != 4 || c.Running != 1 || c.Duplicated != 1 || c.Missing != 1 || c.NotRunning != 1 || c.Extra != 1 {
		t.Fatalf("a broken cluster: %+v", c)
	}
	for _, w := range []string{"app-0 instance 0: 2 task groups: a0-0 on n1 (Running), a0-0-dup on n2 (Running)",
		"app-0 instance 1: no task group", `a1-0 is "Staging" on n1`, "index 2 of a process of 2 instances"} {
		if !strings.Contains(c.String(), w) {
			t.Errorf("%q does not name %q", c, w)
		}
	}

	// The frozen node's task groups are left out: its instance counts as missing until
	// replaced, and its stale Running one is no duplicate.
	frozen := []*v4.TaskGroup{
		tgOf("bench-1", "app-0", 0, "a0-0", "n1", v4.StatusRunning),
		tgOf("bench-1", "app-0", 0, "a0-0-new", "n2", v4.StatusRunning),
		tgOf("bench-1", "app-0", 1, "a0-1", "n2", v4.StatusRunning),
	}
	c = checkInstances(frozen, map[ownerKey]int{{"bench-1", "app-0"}: 2}, map[string]bool{"n1": true})
	if !c.OK() {
		t.Fatalf("the frozen node's task group counted: %v", c)
	}
	if n := serverRunning(frozen, map[string]bool{"n1": true}); n != 2 {
		t.Fatalf("server Running without the frozen node: %d", n)
	}
}

// Only Lost nodes that were not frozen on purpose count.
func TestLostOthers(t *testing.T) {
	node := func(name, phase string) *v4.Node {
		n := &v4.Node{}
		n.Metadata.Name, n.Status.Phase = name, phase
		return n
	}
	nodes := []*v4.Node{node("b", v4.NodeLost), node("a", v4.NodeLost), node("c", v4.NodeReady), node("f", v4.NodeLost)}
	got := lostOthers(nodes, map[string]bool{"f": true})
	if strings.Join(got, ",") != "a,b" {
		t.Fatalf("lost: %v", got)
	}
}

// The simulators' stats files add up; a missing one is an error.
func TestStatsFiles(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	if err := WriteStats(dir+"/a", Stats{Nodes: 3, Ready: 3, Running: 10, Light: true, Frozen: []FrozenNode{{Node: "a-1", LastBeat: at, Interval: 3 * time.Second}}}); err != nil {
		t.Fatal(err)
	}
	if err := WriteStats(dir+"/b", Stats{Nodes: 2, Ready: 1, Running: 5, Light: true}); err != nil {
		t.Fatal(err)
	}
	st, err := ReadStats([]string{dir + "/a", dir + "/b"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Nodes != 5 || st.Ready != 4 || st.Running != 15 || !st.Light || len(st.Frozen) != 1 ||
		!st.Frozen[0].LastBeat.Equal(at) || st.Frozen[0].Interval != 3*time.Second {
		t.Fatalf("stats: %+v", st)
	}
	if _, err := ReadStats([]string{dir + "/none"}); err == nil {
		t.Fatal("a missing stats file was read")
	}
}

// The node's TTL is the server's for the interval it told; the time after it runs from
// the node's last beat.
func TestNodeLossTTL(t *testing.T) {
	if d := nodeTTL(10*time.Second, 0); d != 10*time.Second {
		t.Errorf("no interval told: %s", d)
	}
	if d := nodeTTL(10*time.Second, 10*time.Second); d != 61*time.Second {
		t.Errorf("every 10 s: %s, want the TTL of twice the interval", d)
	}
	if d := nodeTTL(10*time.Second, v4.MaxHeartbeatInterval); d != 181*time.Second {
		t.Errorf("at the ceiling: %s", d)
	}
	start := time.Now()
	r := &NodeLossResult{AllRunning: 14 * time.Second}
	r.expiry(start, FrozenNode{LastBeat: start.Add(-2 * time.Second)}, 10*time.Second)
	if r.TTL != 10*time.Second || r.Expired != 8*time.Second || r.AfterTTL != 6*time.Second {
		t.Errorf("from the last beat: %+v", r)
	}
	r.expiry(start, FrozenNode{}, 10*time.Second) // the last beat unknown: from the freeze
	if r.Expired != 10*time.Second || r.AfterTTL != 4*time.Second {
		t.Errorf("from the freeze: %+v", r)
	}
}

// A simulator's answer to a freeze reaches the process that asked for it; one never
// given ends with the context.
func TestFrozenFile(t *testing.T) {
	freeze := t.TempDir() + "/freeze"
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, fn := range []FrozenNode{{Node: "a"}, {Node: "b", LastBeat: at, Interval: 10 * time.Second}} {
		if err := AppendFrozen(freeze, fn); err != nil {
			t.Fatal(err)
		}
	}
	fn, err := WaitFrozen(t.Context(), freeze, "b")
	if err != nil || !fn.LastBeat.Equal(at) || fn.Interval != 10*time.Second {
		t.Fatalf("WaitFrozen: %+v, %v", fn, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := WaitFrozen(ctx, freeze, "c"); err == nil || !strings.Contains(err.Error(), "node c") {
		t.Fatalf("a freeze never answered: %v", err)
	}
}
