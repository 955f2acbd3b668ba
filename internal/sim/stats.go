package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// Stats is what a simulator's nodes do, as they see it: the cluster benchmark compares
// it with what the server says (Check), so that a status report lost on the way shows.
type Stats struct {
	Nodes int `json:"nodes"`
	Ready int `json:"ready"`
	// Running counts the task groups the running (not frozen) light nodes run with every
	// task started, as they reported them; whole agents are not counted (Light false).
	Running int  `json:"running"`
	Light   bool `json:"light"`
	// Frozen are the nodes frozen so far.
	Frozen []FrozenNode `json:"frozen,omitempty"`
}

// FrozenNode is a node as it froze: when its last beat left and the interval its server
// had told it to beat at (0: none, it beat at its own).
type FrozenNode struct {
	Node     string        `json:"node"`
	LastBeat time.Time     `json:"lastBeat,omitzero"`
	Interval time.Duration `json:"interval,omitempty"`
}

// Stats counts what the simulator's nodes run now.
func (s *Sim) Stats() Stats {
	st := Stats{Nodes: len(s.nodes), Ready: s.Ready(), Light: s.beats != nil}
	for _, sn := range s.nodes {
		if n, ok := sn.(*lightNode); ok && !n.stopped.Load() {
			st.Running += n.running()
		}
	}
	s.mu.Lock()
	st.Frozen = append(st.Frozen, s.frozen...)
	s.mu.Unlock()
	return st
}

// running counts the node's task groups whose tasks run.
func (n *lightNode) running() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, t := range n.tgs {
		if !t.ended && t.started && t.status.Phase == v4.StatusRunning {
			c++
		}
	}
	return c
}

// WriteStats writes st to path whole (a temporary file renamed over it), so that a
// reader never sees half of it.
func WriteStats(path string, st Stats) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("stats file: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("stats file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("stats file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("stats file: %w", err)
	}
	return nil
}

// ReadStats reads the stats files of several simulators and sums them.
func ReadStats(paths []string) (Stats, error) {
	var sum Stats
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return sum, fmt.Errorf("stats file: %w", err)
		}
		var st Stats
		if err := json.Unmarshal(b, &st); err != nil {
			return sum, fmt.Errorf("stats file %s: %w", p, err)
		}
		sum.Nodes += st.Nodes
		sum.Ready += st.Ready
		sum.Running += st.Running
		sum.Light = st.Light && (i == 0 || sum.Light)
		sum.Frozen = append(sum.Frozen, st.Frozen...)
	}
	return sum, nil
}
