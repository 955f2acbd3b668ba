package store

import (
	"context"
	"sync"
)

// A namespace's ledger writes from one store go one at a time (docs/store.md, "Namespace
// limits"). Every write of a counted kind compares the namespace's ledger on its mod
// revision, so two writes of the namespace in flight together cannot both commit: the
// second's transaction still costs a raft entry, then a read of the ledger and a wait
// before it is tried again. In a burst (a controller writing the statuses of a hundred
// workloads of one namespace while their owner applies more) half of those transactions
// failed that way. A write now waits for its namespace's lane from the plan of its
// ledger until its transaction is answered: the writes of one store never race on a
// ledger, and a race with another server's write is still caught by the comparison.

// ledgerLanes holds a lane per namespace with a write in flight or waiting.
type ledgerLanes struct {
	mu    sync.Mutex
	lanes map[string]*ledgerLane
}

// ledgerLane is one namespace's turn: turn holds a token while a write is in flight.
type ledgerLane struct {
	turn  chan struct{}
	users int // writes holding or waiting for the lane; at 0 it is dropped
}

// heldLane is a lane a write holds.
type heldLane struct {
	ns   string
	lane *ledgerLane
}

// take waits for ns's lane until ctx ends.
func (l *ledgerLanes) take(ctx context.Context, ns string) (heldLane, error) {
	l.mu.Lock()
	if l.lanes == nil {
		l.lanes = map[string]*ledgerLane{}
	}
	ln := l.lanes[ns]
	if ln == nil {
		ln = &ledgerLane{turn: make(chan struct{}, 1)}
		l.lanes[ns] = ln
	}
	ln.users++
	l.mu.Unlock()
	select {
	case ln.turn <- struct{}{}:
		return heldLane{ns, ln}, nil
	case <-ctx.Done():
		l.leave(ns, ln)
		return heldLane{}, ctx.Err()
	}
}

// give hands a held lane to the next write of its namespace.
func (l *ledgerLanes) give(h heldLane) {
	<-h.lane.turn
	l.leave(h.ns, h.lane)
}

func (l *ledgerLanes) leave(ns string, ln *ledgerLane) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln.users--
	if ln.users == 0 && l.lanes[ns] == ln {
		delete(l.lanes, ns)
	}
}

// count is the number of namespaces with a lane (tests).
func (l *ledgerLanes) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lanes)
}
