package csitest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/berthhq/berth/internal/atomicfile"
)

// A volume is Root/volumes/<id>: its data directory (what is mounted) and its record.
type volumeRecord struct {
	Name     string `json:"name"`
	Capacity int64  `json:"capacity"`
	// Published are the nodes ControllerPublish published it to.
	Published map[string]bool `json:"published,omitempty"`
}

// volumeIDPattern is what this plugin's IDs look like: a request naming anything else
// (a path, "..") is refused before it is joined to the root.
var volumeIDPattern = regexp.MustCompile(`^v-[0-9a-f]{24}$`)

// volumeID is the ID of the volume created under name: the same name always gives the
// same ID, which makes CreateVolume idempotent.
func volumeID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "v-" + hex.EncodeToString(sum[:12])
}

func (p *Plugin) volumeDir(id string) string { return filepath.Join(p.opts.Root, "volumes", id) }

// DataDir is where the volume id's files are on this machine.
func (p *Plugin) DataDir(id string) string { return filepath.Join(p.volumeDir(id), "data") }

func (p *Plugin) recordPath(id string) string { return filepath.Join(p.volumeDir(id), "volume.json") }

// load reads a volume's record; os.ErrNotExist when the plugin has no such volume.
func (p *Plugin) load(id string) (*volumeRecord, error) {
	if !volumeIDPattern.MatchString(id) {
		return nil, fmt.Errorf("volume ID %q: %w", id, os.ErrNotExist)
	}
	b, err := os.ReadFile(p.recordPath(id))
	if err != nil {
		return nil, err
	}
	var r volumeRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("volume %s: record: %w", id, err)
	}
	return &r, nil
}

func (p *Plugin) save(id string, r *volumeRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(p.DataDir(id), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(p.recordPath(id), b, 0o600)
}

// remove deletes the volume and its data.
func (p *Plugin) remove(id string) error {
	err := os.RemoveAll(p.volumeDir(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
