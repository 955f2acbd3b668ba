package scheduler

import (
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// Revocable capacity (docs/policy.md, "Revocable capacity"), Mesos' oversubscription:
// a node lends to the revocable tier the cpu and memory its non-revocable task groups
// reserve but do not use, as its agent last measured, less a safety margin, at most a
// bounded share of the node; revocable task groups may also take what nobody reserves.
// Their reservations are accounted apart (nodeState.revCPU, revMem), so a non-revocable
// placement never sees them: it takes the capacity back, and the agent evicts the
// revocable ones when the owners' use rises.

// Lendable is what a node may hold of revocable task groups: its free cpu and memory
// (allocatable less non-revocable reservations) and what it lends out of idle
// reservations.
type Lendable struct {
	CPU, MemoryMB             float64 // free plus lent: the revocable tier's whole room
	LentCPU, LentMemoryMB     float64 // the lent part
	RevocableCPU, RevocableMB float64 // what revocable task groups reserve there now
}

// lendable estimates n's room for revocable task groups at now. A missing or stale
// report lends nothing (the free part stays).
func (n *nodeState) lendable(now time.Time) Lendable {
	l := Lendable{RevocableCPU: n.revCPU, RevocableMB: n.revMem}
	if n.lendsAt(now) {
		r := n.lend
		l.LentCPU = v4.Lent(n.alloc.CPU, n.usedCPU, r.UsedCPU, r.Margin, r.MaxFraction)
		l.LentMemoryMB = v4.Lent(n.alloc.MemoryMB, n.usedMem, r.UsedMemoryMB, r.Margin, r.MaxFraction)
	}
	l.CPU = max(0, n.alloc.CPU-n.usedCPU) + l.LentCPU
	l.MemoryMB = max(0, n.alloc.MemoryMB-n.usedMem) + l.LentMemoryMB
	return l
}

// lendsAt reports whether n's agent's lending report is fresh at now (neither older nor
// further ahead than v4.RevocableStale): only then does it lend anything.
func (n *nodeState) lendsAt(now time.Time) bool {
	r := n.lend
	return r != nil && !r.Time.IsZero() && now.Sub(r.Time) <= v4.RevocableStale && r.Time.Sub(now) <= v4.RevocableStale
}

// fitsRevocable checks a revocable request's cpu and memory against n's room for the
// tier (the other resources are checked as for any request).
func (st *reqState) fitsRevocable(n *nodeState) (bool, string) {
	l := n.lendable(time.Unix(0, st.stamp))
	switch {
	case n.revCPU+st.need.CPU > l.CPU+epsilon:
		return false, "insufficient revocable cpu"
	case n.revMem+st.need.MemoryMB > l.MemoryMB+epsilon:
		return false, "insufficient revocable memory"
	}
	return true, ""
}
