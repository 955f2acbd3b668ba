package cni

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/berthhq/berth/internal/atomicfile"
)

// PodState is what CNI DEL needs and the container runtime does not know, one file per
// pod. It is written before ADD, so a crash in the middle still lets a later DEL release
// what ADD took.
type PodState struct {
	ID string `json:"id"`
	// Cluster is the cluster of the agent that set the pod up: a data dir that an agent
	// of another cluster took over (the machine joined another cluster) does not make
	// that agent tear down the first one's pods. Empty in older states.
	Cluster   string          `json:"cluster,omitempty"`
	SandboxID string          `json:"sandboxID"`
	Network   string          `json:"network"`
	Config    json.RawMessage `json:"config"` // the network config of the ADD, self-contained
	Ports     []PortMapping   `json:"ports,omitempty"`
	IP        string          `json:"ip,omitempty"` // set once ADD succeeded
}

// ErrForeignState is a pod state of another cluster's agent: never set up again, torn
// down or removed by this one.
var ErrForeignState = errors.New("the pod's network state is another berth cluster's (its agent's to tear down)")

// States keeps the pod states of one driver in Dir/<pod id>.json for the agent of
// Cluster. Pod IDs are the caller's to validate (one file name).
type States struct {
	Dir     string
	Cluster string
}

func (s States) path(id string) string { return filepath.Join(s.Dir, id+".json") }

// Load reads a pod's state; nil when it has none, ErrForeignState (wrapped) when it is
// another cluster's.
func (s States) Load(id string) (*PodState, error) {
	b, err := os.ReadFile(s.path(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pod %s: read state: %w", id, err)
	}
	var p PodState
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("pod %s: decode state %s: %w", id, s.path(id), err)
	}
	if p.Cluster != "" && p.Cluster != s.Cluster {
		return nil, fmt.Errorf("pod %s: state %s: %w", id, s.path(id), ErrForeignState)
	}
	return &p, nil
}

// Save writes a pod's state atomically (temp file, fsync, rename, fsync of the
// directory).
func (s States) Save(p *PodState) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("pod %s: encode state: %w", p.ID, err)
	}
	if err := atomicfile.Write(s.path(p.ID), b, 0o600); err != nil {
		return fmt.Errorf("pod %s: save state: %w", p.ID, err)
	}
	return nil
}

// Remove deletes a pod's state; one that is not there is no error.
func (s States) Remove(id string) error {
	if err := os.Remove(s.path(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pod %s: remove state: %w", id, err)
	}
	return nil
}

// IDs lists the pods with a state file, but for other clusters' states. An unreadable
// state is listed: its teardown says why.
func (s States) IDs() ([]string, error) {
	ents, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	var ids []string
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".json") {
			continue
		}
		id := strings.TrimSuffix(n, ".json")
		if _, err := s.Load(id); errors.Is(err, ErrForeignState) {
			continue
		}
		ids = append(ids, id)
	}
	return ids, nil
}
