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
//
// A user's write (WithNamespaceLimits) goes before the controllers' and the agents'
// writes waiting for the same lane: in a burst the controllers write a status of each
// workload several times, and a user's apply waited behind all of them. But never more
// than usersInARow users' writes in a row while one of berth's waits: the controllers'
// workers are shared by every namespace, and a tenant that kept writing its own
// namespace would otherwise hold them there for as long as it liked. (With one user's
// write a turn, a burst's applies, four at a time, spent nine tenths of the time they
// were blocked waiting for the lane, behind the other applies and a status write
// between each: docs/benchmarks.md.)

// ledgerLanes holds a lane per namespace with a write in flight or waiting.
type ledgerLanes struct {
	mu    sync.Mutex
	lanes map[string]*ledgerLane
}

// ledgerLane is one namespace's turn, dropped when nobody holds it (nobody waits then).
// Guarded by ledgerLanes.mu.
type ledgerLane struct {
	held          bool
	users, others []chan struct{} // the writes waiting, in order: users' first
	usersInRow    int             // users' writes given the lane since berth's last
}

// usersInARow bounds the users' writes that go before a waiting write of berth's.
const usersInARow = 4

// heldLane is a lane a write holds.
type heldLane struct {
	ns   string
	lane *ledgerLane
}

// take waits for ns's lane until ctx ends; user's writes go first.
func (l *ledgerLanes) take(ctx context.Context, ns string, user bool) (heldLane, error) {
	l.mu.Lock()
	if l.lanes == nil {
		l.lanes = map[string]*ledgerLane{}
	}
	ln := l.lanes[ns]
	if ln == nil {
		ln = &ledgerLane{}
		l.lanes[ns] = ln
	}
	if !ln.held {
		ln.held = true
		l.mu.Unlock()
		return heldLane{ns, ln}, nil
	}
	turn := make(chan struct{}, 1) // given the lane: give sends, never waiting
	if user {
		ln.users = append(ln.users, turn)
	} else {
		ln.others = append(ln.others, turn)
	}
	l.mu.Unlock()
	select {
	case <-turn:
		return heldLane{ns, ln}, nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if removed(&ln.users, turn) || removed(&ln.others, turn) {
		return heldLane{}, ctx.Err()
	}
	// Given the lane as ctx ended: hand it on.
	l.giveLocked(heldLane{ns, ln})
	return heldLane{}, ctx.Err()
}

// removed takes turn out of q; false when it is not there (it was given the lane).
func removed(q *[]chan struct{}, turn chan struct{}) bool {
	for i, t := range *q {
		if t == turn {
			*q = append((*q)[:i], (*q)[i+1:]...)
			return true
		}
	}
	return false
}

// give hands a held lane to the next write of its namespace.
func (l *ledgerLanes) give(h heldLane) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.giveLocked(h)
}

func (l *ledgerLanes) giveLocked(h heldLane) {
	ln := h.lane
	var next chan struct{}
	switch {
	case len(ln.users) > 0 && (ln.usersInRow < usersInARow || len(ln.others) == 0):
		next, ln.users = ln.users[0], ln.users[1:]
		ln.usersInRow++
	case len(ln.others) > 0:
		next, ln.others, ln.usersInRow = ln.others[0], ln.others[1:], 0
	}
	if next == nil {
		ln.held = false
		if l.lanes[h.ns] == ln {
			delete(l.lanes, h.ns)
		}
		return
	}
	next <- struct{}{}
}

// count is the number of namespaces with a lane (tests).
func (l *ledgerLanes) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lanes)
}
