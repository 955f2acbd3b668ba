package store

import (
	"maps"
	"sync"

	v4 "github.com/berthhq/berth/api/v4"
)

// watchCount counts the store's open object watches by kind (Watches): a process that
// reads a kind through its shared cache holds one etcd watch of it, whatever the number
// of readers (docs/store.md, "Shared cache").
type watchCount struct {
	mu   sync.Mutex
	open map[v4.Kind]int
}

func (w *watchCount) add(kind v4.Kind, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.open == nil {
		w.open = map[v4.Kind]int{}
	}
	w.open[kind] += n
	if w.open[kind] == 0 {
		delete(w.open, kind)
	}
}

// Watches returns how many object watches (Watch) of each kind are open now.
func (s *Store) Watches() map[v4.Kind]int {
	s.watches.mu.Lock()
	defer s.watches.mu.Unlock()
	return maps.Clone(s.watches.open)
}
