package process

import "sync"

// keyedMutex is one mutex per key (a task ID, a package cache key). A key's mutex is
// made when it is first wanted and dropped when its last holder unlocks and nobody waits
// for it: task IDs carry their task group's name, which changes with every restart, so
// a map that kept every key would grow for as long as the agent runs.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*refMutex
}

// refMutex is one key's mutex and how many hold it or wait for it (guarded by the
// keyedMutex's mu).
type refMutex struct {
	sync.Mutex
	refs int
}

// acquire returns the key's mutex, counting the caller in.
func (k *keyedMutex) acquire(key string) *refMutex {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.locks == nil {
		k.locks = map[string]*refMutex{}
	}
	m := k.locks[key]
	if m == nil {
		m = &refMutex{}
		k.locks[key] = m
	}
	m.refs++
	return m
}

// release counts the caller out of the key's mutex, dropping it when nobody is left.
func (k *keyedMutex) release(key string) *refMutex {
	k.mu.Lock()
	defer k.mu.Unlock()
	m := k.locks[key]
	if m == nil {
		panic("process: unlock of an unlocked key " + key)
	}
	if m.refs--; m.refs == 0 {
		delete(k.locks, key)
	}
	return m
}

// Lock locks the key, waiting while another holds it.
func (k *keyedMutex) Lock(key string) { k.acquire(key).Lock() }

// TryLock locks the key unless another holds it, and reports whether it did.
func (k *keyedMutex) TryLock(key string) bool {
	if k.acquire(key).TryLock() {
		return true
	}
	k.release(key)
	return false
}

// Unlock unlocks the key, which the caller locked.
func (k *keyedMutex) Unlock(key string) { k.release(key).Unlock() }

// held returns how many keys have a mutex (tests).
func (k *keyedMutex) held() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.locks)
}
