package csivolume

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/recorddir"
)

// Record is one publication of a pod's volume, kept in a file of its own from before the
// claim until the claim is released, so that an agent that crashed in between finds it at
// its next start. It holds no secret: undoing needs none.
type Record struct {
	Pod       string `json:"pod"` // namespace/name
	Dir       string `json:"dir"` // the target
	Namespace string `json:"namespace"`
	TaskGroup string `json:"taskgroup"`
	Volume    string `json:"volume"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
	// Plugin and ExternalID are set once the server granted the claim, before the
	// plugin is called.
	Plugin     string `json:"plugin,omitempty"`
	ExternalID string `json:"externalID,omitempty"`
	// Published is set once NodePublish succeeded.
	Published bool      `json:"published,omitempty"`
	Created   time.Time `json:"created"`
}

// claim is the record's claim, as the server's routes take it.
func (r Record) claim() v4.CSIClaimRequest {
	return v4.CSIClaimRequest{Namespace: r.Namespace, Volume: r.Volume, TaskGroup: r.TaskGroup, ReadOnly: r.ReadOnly}
}

// stageRecord is one volume staged on the node, kept from before NodeStage until after
// NodeUnstage. The publications of the same plugin and volume ID count its users.
type stageRecord struct {
	Plugin     string `json:"plugin"`
	ExternalID string `json:"externalID"`
	Path       string `json:"path"`
	// Done is set once NodeStage succeeded; Staged says whether the plugin staged (one
	// without STAGE_UNSTAGE_VOLUME does not).
	Done   bool `json:"done,omitempty"`
	Staged bool `json:"staged,omitempty"`
}

// The record directories under Options.StateDir.
const (
	publicationsDir = "publications"
	stagingsDir     = "stagings"
)

// recordName is the file of the record of dir: a hash, so that any dir makes one plain name.
func recordName(dir string) string { return recorddir.FileName(filepath.Clean(dir)) }

func (m *Manager) saveRecord(r Record) error {
	return m.save(publicationsDir, recordName(r.Dir), r, "the CSI publication at "+r.Dir)
}

func (m *Manager) loadRecord(dir string) (Record, bool, error) {
	var r Record
	ok, err := m.load(publicationsDir, recordName(dir), &r, "the CSI publication at "+dir)
	return r, ok, err
}

func (m *Manager) dropRecord(dir string) error {
	return m.drop(publicationsDir, recordName(dir), "the CSI publication at "+dir)
}

func (m *Manager) saveStage(s stageRecord) error {
	return m.save(stagingsDir, stageKey(s.Plugin, s.ExternalID)+".json", s, "the CSI staging at "+s.Path)
}

func (m *Manager) loadStage(key string) (stageRecord, bool, error) {
	var s stageRecord
	ok, err := m.load(stagingsDir, key+".json", &s, "a CSI staging")
	return s, ok, err
}

func (m *Manager) dropStage(key string) error {
	return m.drop(stagingsDir, key+".json", "a CSI staging")
}

// records is the directory of the records of kind sub.
func (m *Manager) records(sub string) recorddir.Dir {
	return recorddir.Dir{Path: filepath.Join(m.opts.StateDir, sub), Mkdir: func(dir string) error {
		return mkdirClosed(dir, m.opts.StateDir)
	}}
}

// save writes v atomically: a crash leaves the old record or the new, never half.
func (m *Manager) save(sub, name string, v any, what string) error {
	if err := m.records(sub).Save(name, v); err != nil {
		return fmt.Errorf("record %s: %w", what, err)
	}
	return nil
}

// load reads a record into v; ok is false when there is none.
func (m *Manager) load(sub, name string, v any, what string) (bool, error) {
	ok, err := m.records(sub).Load(name, v)
	if err != nil {
		return false, fmt.Errorf("read the record of %s: %w", what, err)
	}
	return ok, nil
}

// drop removes a record (none is no error).
func (m *Manager) drop(sub, name, what string) error {
	if err := m.records(sub).Drop(name); err != nil {
		return fmt.Errorf("forget %s: %w", what, err)
	}
	return nil
}

// Records lists the publications not yet undone. A record that cannot be read is logged
// and skipped: it names nothing the agent could undo.
func (m *Manager) Records() ([]Record, error) {
	var out []Record
	err := m.list(publicationsDir, func(name string, b []byte) bool {
		var r Record
		if json.Unmarshal(b, &r) != nil || r.Dir == "" || recordName(r.Dir) != name {
			return false
		}
		out = append(out, r)
		return true
	})
	return out, err
}

// stagings lists the stagings not yet undone, by key.
func (m *Manager) stagings() (map[string]stageRecord, error) {
	out := map[string]stageRecord{}
	err := m.list(stagingsDir, func(name string, b []byte) bool {
		var s stageRecord
		if json.Unmarshal(b, &s) != nil || s.Path == "" || stageKey(s.Plugin, s.ExternalID)+".json" != name {
			return false
		}
		out[strings.TrimSuffix(name, ".json")] = s
		return true
	})
	return out, err
}

// list calls take with each record file of sub; take reports whether it could read it.
func (m *Manager) list(sub string, take func(name string, b []byte) bool) error {
	err := m.records(sub).List(take, func(name string, err error) {
		m.log.Error("unreadable CSI record", "file", filepath.Join(sub, name), "err", err)
	})
	if err != nil {
		return fmt.Errorf("list the CSI records: %w", err)
	}
	return nil
}

// mkdirClosed makes dir, and the directories down to it from root, the agent's alone
// (0700), and the missing ones above root 0750: the CSI directory of the data dir is
// shared with the plugins' sockets (another part of the agent makes it too).
func mkdirClosed(dir, root string) error {
	if err := os.MkdirAll(filepath.Dir(root), 0o750); err != nil {
		return err
	}
	return os.MkdirAll(dir, 0o700)
}
