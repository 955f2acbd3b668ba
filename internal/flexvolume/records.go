package flexvolume

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/berthhq/berth/internal/atomicfile"
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
func recordName(dir string) string {
	h := sha256.Sum256([]byte(filepath.Clean(dir)))
	return hex.EncodeToString(h[:16]) + ".json"
}

// saveRecord writes r atomically: a crash leaves the old record or the new, never half.
func (m *Manager) saveRecord(r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(m.opts.StateDir, 0o700); err != nil {
		return fmt.Errorf("record the FlexVolume mount of %s: %w", r.Dir, err)
	}
	if err := atomicfile.Write(filepath.Join(m.opts.StateDir, recordName(r.Dir)), b, 0o600); err != nil {
		return fmt.Errorf("record the FlexVolume mount of %s: %w", r.Dir, err)
	}
	return nil
}

// loadRecord reads the record of dir; ok is false when there is none.
func (m *Manager) loadRecord(dir string) (r Record, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(m.opts.StateDir, recordName(dir)))
	if errors.Is(err, fs.ErrNotExist) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("read the FlexVolume record of %s: %w", dir, err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, false, fmt.Errorf("read the FlexVolume record of %s: %w", dir, err)
	}
	return r, true, nil
}

// dropRecord removes the record of dir (none is no error).
func (m *Manager) dropRecord(dir string) error {
	err := os.Remove(filepath.Join(m.opts.StateDir, recordName(dir)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("forget the FlexVolume mount of %s: %w", dir, err)
	}
	return nil
}

// Records lists the volumes mounted and not yet unmounted. A record that cannot be read
// is logged and skipped: it names no mount the agent could undo.
func (m *Manager) Records() ([]Record, error) {
	entries, err := os.ReadDir(m.opts.StateDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the FlexVolume records: %w", err)
	}
	var out []Record
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(m.opts.StateDir, e.Name()))
		var r Record
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err != nil || r.Dir == "" || recordName(r.Dir) != e.Name() {
			m.log.Error("unreadable FlexVolume record", "file", e.Name(), "err", err)
			continue
		}
		out = append(out, r)
	}
	return out, nil
}
