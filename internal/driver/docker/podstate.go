package docker

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/berthhq/berth/internal/atomicfile"
	"github.com/berthhq/berth/internal/driver/cni"
)

// podState is what CNI DEL needs and Docker does not know, in DataDir/pods/<id>.json.
// It is written before ADD, so a crash in the middle still lets a later DEL release
// what ADD took.
type podState struct {
	ID string `json:"id"`
	// Cluster is the cluster of the agent that set the pod up (owner.go): a data dir
	// that an agent of another cluster took over (the machine joined another cluster)
	// does not make that agent tear down the first one's pods. Empty in older states.
	Cluster   string            `json:"cluster,omitempty"`
	SandboxID string            `json:"sandboxID"`
	Network   string            `json:"network"`
	Config    json.RawMessage   `json:"config"` // the network config of the ADD, self-contained
	Ports     []cni.PortMapping `json:"ports,omitempty"`
	IP        string            `json:"ip,omitempty"` // set once ADD succeeded
}

func (d *Driver) podPath(id string) string { return filepath.Join(d.podsDir, id+".json") }

// errForeignPod is a pod state of another cluster's agent: never set up again, torn down
// or removed by this one.
var errForeignPod = errors.New("the pod's network state is another berth cluster's (its agent's to tear down)")

// loadPod reads a pod's state; nil when it has none, errForeignPod (wrapped) when it is
// another cluster's.
func (d *Driver) loadPod(id string) (*podState, error) {
	if !validID(id) {
		return nil, nil
	}
	b, err := os.ReadFile(d.podPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pod %s: read state: %w", id, err)
	}
	var p podState
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("pod %s: decode state %s: %w", id, d.podPath(id), err)
	}
	if p.Cluster != "" && p.Cluster != d.owner.Cluster {
		return nil, fmt.Errorf("pod %s: state %s: %w", id, d.podPath(id), errForeignPod)
	}
	return &p, nil
}

// savePod writes a pod's state atomically (temp file, fsync, rename, fsync of the
// directory).
func (d *Driver) savePod(p *podState) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("pod %s: encode state: %w", p.ID, err)
	}
	if err := atomicfile.Write(d.podPath(p.ID), b, 0o600); err != nil {
		return fmt.Errorf("pod %s: save state: %w", p.ID, err)
	}
	return nil
}

func (d *Driver) removePod(id string) error {
	if err := os.Remove(d.podPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pod %s: remove state: %w", id, err)
	}
	return nil
}

// podIDsFromFiles lists the pods with a state file, but for other clusters' states.
func (d *Driver) podIDsFromFiles() ([]string, error) {
	ents, err := os.ReadDir(d.podsDir)
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
		if _, err := d.loadPod(id); errors.Is(err, errForeignPod) {
			continue
		}
		ids = append(ids, id) // an unreadable state is listed: its teardown says why

	}
	return ids, nil
}
