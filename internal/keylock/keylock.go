// Package keylock serializes work by key (a mount directory, a volume's staging): one
// holder per key at a time, and a waiter gives up when its context ends. A key's lock
// lives only while someone holds or waits for it, so the map does not grow with every
// key ever used (a node mounts a new directory for every pod).
package keylock

import (
	"context"
	"sync"
)

// Locks is a lock per key; the zero value is ready to use.
type Locks struct {
	mu    sync.Mutex
	locks map[string]*lock
}

// lock is one key's lock; refs counts its holder and waiters (guarded by Locks.mu).
type lock struct {
	ch   chan struct{}
	refs int
}

// Lock takes key's lock, waiting until ctx ends at most (its error is returned then).
// unlock releases it, once.
func (l *Locks) Lock(ctx context.Context, key string) (unlock func(), err error) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*lock{}
	}
	k := l.locks[key]
	if k == nil {
		k = &lock{ch: make(chan struct{}, 1)}
		l.locks[key] = k
	}
	k.refs++
	l.mu.Unlock()
	release := func() {
		l.mu.Lock()
		if k.refs--; k.refs == 0 {
			delete(l.locks, key)
		}
		l.mu.Unlock()
	}
	select {
	case k.ch <- struct{}{}:
		return sync.OnceFunc(func() { <-k.ch; release() }), nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}

// Len is how many keys are held or waited for.
func (l *Locks) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.locks)
}
