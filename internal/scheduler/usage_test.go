package scheduler

import (
	"math"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// TestUsage: running task groups hold resources; ended ones count as task groups of the
// node but hold nothing; unknown nodes are left out.
func TestUsage(t *testing.T) {
	s := snapshotOf([]*v4.Node{node("n1"), node("n2")},
		tg(webApp, 0, "n1", v4.StatusRunning, nil, nil),
		tg(webApp, 1, "n1", v4.StatusRunning, nil, nil),
		tg(webApp, 2, "n1", v4.StatusFailed, nil, nil),
		tg(webApp, 3, "n2", v4.StatusStaging, nil, nil))
	got := s.Usage([]string{"n1", "n2", "gone"}, time.Now())
	if len(got) != 2 {
		t.Fatalf("usage of %d nodes: %+v", len(got), got)
	}
	n1 := got["n1"]
	if math.Abs(n1.CPU-0.2) > 1e-9 || n1.MemoryMB != 20 || n1.TaskGroups != 3 {
		t.Errorf("n1: %+v", n1)
	}
	// Of what they hold, the executors' overhead is that of the two that hold it.
	if n1.OverheadMemoryMB != 2*DefaultOverhead.MemoryMB || math.Abs(n1.OverheadCPU-2*DefaultOverhead.CPU) > 1e-9 {
		t.Errorf("n1's overhead: %+v", n1)
	}
	if n2 := got["n2"]; math.Abs(n2.CPU-0.1) > 1e-9 || n2.TaskGroups != 1 {
		t.Errorf("n2: %+v", n2)
	}
}
