package controller

import (
	"slices"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/scheduler"
)

// statusPace is how often a workload's status is written while only its counts move
// (instances Running, stopped, waiting for a node). In a burst an application's count
// changes with nearly every instance that starts, and each write of it is a raft entry
// and a turn on its namespace's ledger, taken between the users' writes of that
// namespace (docs/store.md, "Namespace limits"): at 100 applications of 100 instances,
// the users' applies spent most of their time waiting for those turns. A change of
// phase, message, instance count or back-offs is written at once; the counts follow at
// most statusPace after the last write, by a reconcile queued for then. (Nomad batches
// its allocations' health updates the same way.)
const statusPace = 500 * time.Millisecond

// statusPacer remembers when each workload's status was last written.
type statusPacer struct {
	mu   sync.Mutex
	last map[scheduler.AppKey]time.Time
}

// paceSweepAt is the number of workloads remembered beyond which a write forgets those
// written more than statusPace ago (they are paced no more).
const paceSweepAt = 1024

// wait is how long a write of key that changes only counts must wait; 0 to write now.
func (p *statusPacer) wait(key scheduler.AppKey, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.last[key]
	if !ok {
		return 0
	}
	return max(0, last.Add(statusPace).Sub(now))
}

// wrote records that key's status was written at now.
func (p *statusPacer) wrote(key scheduler.AppKey, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[scheduler.AppKey]time.Time{}
	}
	if len(p.last) >= paceSweepAt {
		for k, t := range p.last {
			if now.Sub(t) >= statusPace {
				delete(p.last, k)
			}
		}
	}
	p.last[key] = now
}

// forget drops key (its workload is gone).
func (p *statusPacer) forget(key scheduler.AppKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
}

// countsOnly reports whether next differs from cur in its counts alone: Running, Stopped
// and why instances wait for a node.
func countsOnly(cur, next v4.WorkloadStatus) bool {
	return cur.Phase == next.Phase && cur.LastPhase == next.LastPhase && cur.Instances == next.Instances &&
		cur.Message == next.Message && slices.EqualFunc(cur.BackOff, next.BackOff, sameBackOff)
}

func sameBackOff(a, b v4.InstanceBackOff) bool {
	return a.Index == b.Index && a.TaskGroup == b.TaskGroup && a.Reason == b.Reason && a.RestartAt.Equal(b.RestartAt) &&
		a.Restart == b.Restart && a.LastExit == b.LastExit
}
