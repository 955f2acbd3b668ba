package scheduler

import (
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

var (
	revNow   = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ownerApp = AppKey{Kind: v4.KindApplication, Namespace: "ns-a", Name: "owner"}
	revApp   = AppKey{Kind: v4.KindApplication, Namespace: "ns-b", Name: "batch"}
)

// lendingNode is 8 cores and 16000 MB, with an owner reserving 7 cores and 14000 MB.
func lendingNode(report *v4.RevocableStatus) *Snapshot {
	n := node("n1")
	n.Status.Revocable = report
	owner := tg(ownerApp, 0, "n1", v4.StatusRunning, nil, nil)
	owner.Spec.Resources = v4.NodeResources{CPU: 7, MemoryMB: 14000}
	return snapshotOf([]*v4.Node{n}, owner)
}

func report(at time.Time, cpu, mem, margin, maxFraction float64) *v4.RevocableStatus {
	return &v4.RevocableStatus{Time: at, UsedCPU: cpu, UsedMemoryMB: mem, Margin: margin, MaxFraction: maxFraction}
}

func TestLendable(t *testing.T) {
	for _, c := range []struct {
		name         string
		report       *v4.RevocableStatus
		lentCPU, mem float64
	}{
		// Idle 6 cores and 12000 MB, less 10% of the node, at most half of it.
		{"bounded by the node's fraction", report(revNow, 1, 2000, 0.1, 0.5), 4, 8000},
		{"less the margin", report(revNow, 1, 2000, 0.5, 1), 2, 4000},
		{"a fraction of 0 lends nothing", report(revNow, 1, 2000, 0.1, 0), 0, 0},
		{"use above the reservation lends nothing", report(revNow, 9, 20000, 0, 1), 0, 0},
		{"a stale report lends nothing", report(revNow.Add(-2*v4.RevocableStale), 1, 2000, 0.1, 0.5), 0, 0},
		{"a report from the future lends nothing", report(revNow.Add(2*v4.RevocableStale), 1, 2000, 0.1, 0.5), 0, 0},
		{"no report lends nothing", nil, 0, 0},
		{"a report without a time lends nothing", report(time.Time{}, 1, 2000, 0.1, 0.5), 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := lendingNode(c.report)
			l := s.byName["n1"].lendable(revNow)
			if !near(l.LentCPU, c.lentCPU) || !near(l.LentMemoryMB, c.mem) {
				t.Errorf("lent %v cores and %v MB, want %v and %v", l.LentCPU, l.LentMemoryMB, c.lentCPU, c.mem)
			}
			// The nodes list shows the same, without a fresh report nothing.
			if u := s.Usage([]string{"n1"}, revNow)["n1"]; u.Lends != nil && (!near(u.Lends.CPU, c.lentCPU) || !near(u.Lends.MemoryMB, c.mem)) {
				t.Errorf("usage lends %+v, want %v cores and %v MB", *u.Lends, c.lentCPU, c.mem)
			} else if fresh := c.report != nil && c.report.Time.Equal(revNow); (u.Lends != nil) != fresh {
				t.Errorf("usage lends %+v with a fresh report %v", u.Lends, fresh)
			}
			// What nobody reserves is always the tier's too.
			if !near(l.CPU, 1+c.lentCPU) || !near(l.MemoryMB, 2000+c.mem) {
				t.Errorf("room %v cores and %v MB, want %v and %v", l.CPU, l.MemoryMB, 1+c.lentCPU, 2000+c.mem)
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }

func revRequest(app AppKey, memMB float64, revocable bool, idx ...int) *Request {
	return &Request{App: app, Indexes: idx, Resources: v4.NodeResources{CPU: 0.5, MemoryMB: memMB}, Revocable: revocable}
}

func TestPlaceRevocable(t *testing.T) {
	opts := Options{Now: func() time.Time { return revNow }}
	s := lendingNode(report(revNow, 1, 2000, 0.1, 0.5)) // room: 2000 free + 8000 lent MB
	// Three of 3000 MB (and 64 of overhead each) fit in 10000 MB; a fourth does not.
	res := s.Place(revRequest(revApp, 3000, true, 0, 1, 2, 3), opts)
	if len(res.Placements) != 3 || len(res.Unplaced) != 1 {
		t.Fatalf("placed %d, unplaced %v, want 3 and 1", len(res.Placements), res.Unplaced)
	}
	if got := res.Reason.String(); got == "" {
		t.Errorf("no reason for the unplaced one")
	}
	// A non-revocable request does not count them: the 2000 MB free are still its.
	other := AppKey{Kind: v4.KindApplication, Namespace: "ns-a", Name: "other"}
	if res := s.Place(revRequest(other, 1900, false, 0), opts); len(res.Placements) != 1 {
		t.Fatalf("the non-revocable request was not placed: %v", res.Reason)
	}
	// Nor do they count as the owner's reservation when nothing is lent any more.
	stale := lendingNode(report(revNow.Add(-time.Hour), 1, 2000, 0.1, 0.5))
	if res := stale.Place(revRequest(revApp, 3000, true, 0), opts); len(res.Placements) != 0 {
		t.Fatalf("a stale report lent room: placed on %s", res.Placements[0].Node)
	}
	if res := stale.Place(revRequest(revApp, 1000, true, 0), opts); len(res.Placements) != 1 {
		t.Fatalf("the free room was not the revocable tier's: %v", res.Reason)
	}
}

func TestRevocableNotVictims(t *testing.T) {
	opts := Options{Now: func() time.Time { return revNow }}
	s := lendingNode(report(revNow, 1, 2000, 0.1, 0.5))
	if res := s.Place(revRequest(revApp, 3000, true, 0, 1), opts); len(res.Placements) != 2 {
		t.Fatalf("placed %d revocable", len(res.Placements))
	}
	// A request that does not fit preempts nothing of the revocable tier: evicting
	// them frees no capacity a non-revocable placement counts.
	big := revRequest(AppKey{Kind: v4.KindApplication, Namespace: "ns-a", Name: "big"}, 5000, false, 0)
	big.Priority = -1 // below the owner's 0: only the revocable ones are lower
	for _, p := range s.tgs {
		if p.revocable {
			p.priority = -10
		}
	}
	if p := s.Preempt(big, opts); p != nil {
		t.Fatalf("preempted %v", p.Victims)
	}
}

// The node's usage shows what the revocable tier reserves apart.
func TestUsageRevocable(t *testing.T) {
	s := lendingNode(report(revNow, 1, 2000, 0.1, 0.5))
	s.Place(revRequest(revApp, 3000, true, 0), Options{Now: func() time.Time { return revNow }})
	u := s.Usage([]string{"n1"}, revNow)["n1"]
	if u.MemoryMB != 14000 || u.RevocableMemoryMB != 3000+DefaultOverhead.MemoryMB || u.TaskGroups != 2 {
		t.Errorf("usage %+v", u)
	}
}
