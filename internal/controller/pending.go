package controller

import (
	"slices"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
)

// The structured side of the status message's "cannot be placed" and "waits for node":
// status.pending, which clients read instead of the message's words.

// unschedulable records that the indexes res left unplaced fit on no node. It wins over
// an instance held for its node: the whole workload then waits for the cluster.
func (r *pass) unschedulable(res scheduler.Result) {
	r.pending = &v4.Pending{Reason: v4.PendingUnschedulable, Message: reasonText(res.Reason), Check: res.Reason.Main(),
		Instances: len(res.Unplaced), Indexes: firstIndexes(res.Unplaced)}
}

// waitingForHost records that instance idx is held for node until retainUntil (hostRetainTime)
// and res says why that node cannot take it yet. The first such instance gives the
// message and node; the others are counted.
func (r *pass) waitingForHost(idx int, node string, until time.Time, res scheduler.Result) {
	if p := r.pending; p != nil {
		if p.Reason == v4.PendingWaitingForHost {
			p.Instances++
			if len(p.Indexes) < v4.MaxPendingListed {
				p.Indexes = append(p.Indexes, idx) // placeMissing goes through the indexes in order
			}
		}
		return
	}
	r.pending = &v4.Pending{Reason: v4.PendingWaitingForHost, Message: reasonText(res.Reason), Check: res.Reason.Main(),
		Instances: 1, Indexes: []int{idx}, Node: node, Until: until.UTC()}
}

// pendingStatus is the pass's pending reason, its Since kept from the status while the
// reason stays the same, so a wait that goes on writes nothing new.
func (r *pass) pendingStatus() *v4.Pending {
	p := r.pending
	if p == nil {
		return nil
	}
	if prev := r.w.Status.Pending; prev != nil && prev.Reason == p.Reason && !prev.Since.IsZero() {
		p.Since = prev.Since
	} else {
		p.Since = r.now.UTC().Truncate(time.Second)
	}
	return p
}

// firstIndexes is the lowest MaxPendingListed of idx, sorted.
func firstIndexes(idx []int) []int {
	s := slices.Sorted(slices.Values(idx))
	return s[:min(len(s), v4.MaxPendingListed)]
}

// reasonText is the scheduler's reason in words ("" without one).
func reasonText(r *scheduler.Reason) string {
	if r == nil {
		return ""
	}
	return r.String()
}
