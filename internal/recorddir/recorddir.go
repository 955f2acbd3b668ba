// Package recorddir keeps small JSON records, a file each, in a directory of the agent's
// data dir: what the agent did on the node and must be able to undo after a crash (the
// FlexVolume mounts of internal/flexvolume, the CSI publications and stagings of
// internal/csivolume). A write is atomic: a crash leaves the old record or the new,
// never half of one.
package recorddir

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/berthhq/berth/internal/atomicfile"
)

// Dir is a directory of records.
type Dir struct {
	Path string
	// Mkdir makes Path before a write (os.MkdirAll with mode 0700 when nil).
	Mkdir func(path string) error
}

// Hash is a key of any form (a path, a volume's ID) as a plain name: 32 hex digits.
func Hash(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:16])
}

// FileName is the name of the record file of key.
func FileName(key string) string { return Hash(key) + ".json" }

// Save writes v, as JSON, to the record file name.
func (d Dir) Save(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	mkdir := d.Mkdir
	if mkdir == nil {
		mkdir = func(p string) error { return os.MkdirAll(p, 0o700) }
	}
	if err := mkdir(d.Path); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(d.Path, name), b, 0o600)
}

// Load reads the record file name into v; ok is false when there is none.
func (d Dir) Load(name string, v any) (ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(d.Path, name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	return err == nil, err
}

// Drop removes the record file name; none is no error.
func (d Dir) Drop(name string) error {
	if err := os.Remove(filepath.Join(d.Path, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// List calls take with the name and content of each record file (a regular file named
// *.json); a file that cannot be read, or that take refuses, goes to bad (when set)
// instead: it names nothing the agent could undo. A directory not made yet holds no
// records.
func (d Dir) List(take func(name string, b []byte) bool, bad func(name string, err error)) error {
	entries, err := os.ReadDir(d.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d.Path, e.Name()))
		if (err != nil || !take(e.Name(), b)) && bad != nil {
			bad(e.Name(), err)
		}
	}
	return nil
}
