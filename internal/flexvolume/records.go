package flexvolume

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/berthhq/berth/internal/recorddir"
)

// Record is one volume a driver mounted, kept in a file of its own until it is unmounted
// (and detached), so that an agent that crashed in between finds it at its next start.
type Record struct {
	Pod    string `json:"pod"` // namespace/name
	Dir    string `json:"dir"`
	Driver string `json:"driver"`
	// Attached is a volume of a driver with the attach capability: its teardown is
	// unmountdevice, then detach of Device.
	Attached bool      `json:"attached,omitempty"`
	Device   string    `json:"device,omitempty"`
	Mounted  time.Time `json:"mounted"`
}

// recordName is the file of the record of dir: a hash, so that any dir makes one plain name.
func recordName(dir string) string { return recorddir.FileName(filepath.Clean(dir)) }

// saveRecord writes r atomically: a crash leaves the old record or the new, never half.
func (m *Manager) saveRecord(r Record) error {
	if err := m.records.Save(recordName(r.Dir), r); err != nil {
		return fmt.Errorf("record the FlexVolume mount of %s: %w", r.Dir, err)
	}
	return nil
}

// loadRecord reads the record of dir; ok is false when there is none.
func (m *Manager) loadRecord(dir string) (r Record, ok bool, err error) {
	if ok, err = m.records.Load(recordName(dir), &r); err != nil {
		return r, false, fmt.Errorf("read the FlexVolume record of %s: %w", dir, err)
	}
	return r, ok, nil
}

// dropRecord removes the record of dir (none is no error).
func (m *Manager) dropRecord(dir string) error {
	if err := m.records.Drop(recordName(dir)); err != nil {
		return fmt.Errorf("forget the FlexVolume mount of %s: %w", dir, err)
	}
	return nil
}

// Records lists the volumes mounted and not yet unmounted. A record that cannot be read
// is logged and skipped: it names no mount the agent could undo.
func (m *Manager) Records() ([]Record, error) {
	var out []Record
	err := m.records.List(func(name string, b []byte) bool {
		var r Record
		if json.Unmarshal(b, &r) != nil || r.Dir == "" || recordName(r.Dir) != name {
			return false
		}
		out = append(out, r)
		return true
	}, func(name string, err error) {
		m.log.Error("unreadable FlexVolume record", "file", name, "err", err)
	})
	if err != nil {
		return nil, fmt.Errorf("list the FlexVolume records: %w", err)
	}
	return out, nil
}
