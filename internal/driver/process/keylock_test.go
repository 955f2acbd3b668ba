package process

import (
	"fmt"
	"sync"
	"testing"
)

// TestKeyedMutexEmpties: each key is held by one at a time, and once every holder has
// unlocked (a TryLock that failed included) no key keeps a mutex.
func TestKeyedMutexEmpties(t *testing.T) {
	var k keyedMutex
	inside := map[string]int{}
	var insideMu sync.Mutex
	var wg sync.WaitGroup
	for i := range 64 {
		key := fmt.Sprintf("ns.%d-%d.task", i%8, i) // names that change with each restart
		shared := fmt.Sprintf("shared-%d", i%4)
		wg.Go(func() {
			for _, key := range []string{key, shared} {
				k.Lock(key)
				insideMu.Lock()
				inside[key]++
				if inside[key] != 1 {
					t.Errorf("%s held by %d at once", key, inside[key])
				}
				insideMu.Unlock()
				if k.TryLock(key) {
					t.Errorf("%s locked twice", key)
				}
				insideMu.Lock()
				inside[key]--
				insideMu.Unlock()
				k.Unlock(key)
			}
		})
	}
	wg.Wait()
	if n := k.held(); n != 0 {
		t.Fatalf("%d keys keep a mutex after every holder unlocked", n)
	}
	if !k.TryLock("a") || k.held() != 1 {
		t.Fatal("TryLock of a free key")
	}
	k.Unlock("a")
	if n := k.held(); n != 0 {
		t.Fatalf("%d keys keep a mutex", n)
	}
}
