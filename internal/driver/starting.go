package driver

import "sync"

// Starting is the set of task IDs whose Start runs, so that a driver refuses a second
// Start of one before the first has made its task. The zero value is ready to use.
type Starting struct {
	mu  sync.Mutex
	ids map[string]bool
}

// Begin marks id as starting; false when a Start of it already runs.
func (s *Starting) Begin(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids[id] {
		return false
	}
	if s.ids == nil {
		s.ids = map[string]bool{}
	}
	s.ids[id] = true
	return true
}

// End forgets id's Start.
func (s *Starting) End(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ids, id)
}
