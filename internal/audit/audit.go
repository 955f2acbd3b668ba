// Package audit appends one JSON line per audited request to a file (docs/security.md,
// Audit log): who, what, which object, and the result. The file is rotated by size and a
// bounded number of old files is kept, so the log cannot fill the disk.
package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Entry is one audited request.
type Entry struct {
	Time time.Time `json:"time"`
	// Who made it: "token berth-acl-<id> (<name>)", "anonymous".
	Who       string `json:"who"`
	Verb      string `json:"verb"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Method    string `json:"method"`
	Path      string `json:"path"`
	// Status is the HTTP status of the answer: 401 and 403 are refusals.
	Status int    `json:"status"`
	Remote string `json:"remote,omitempty"`
}

// Defaults of Config.
const (
	DefaultMaxBytes = 100 << 20
	DefaultMaxFiles = 5
	// maxField bounds what of a request's path and name an entry keeps: they come from
	// clients.
	maxField = 1024
)

// Log is an audit log file. Its methods are safe for concurrent use.
type Log struct {
	path     string
	maxBytes int64
	maxFiles int

	mu   sync.Mutex
	f    *os.File
	size int64
}

// Open opens (or creates, 0600) the log at path, rotated past maxBytes with maxFiles old
// files kept (path.1 the newest); 0 takes the defaults.
func Open(path string, maxBytes int64, maxFiles int) (*Log, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if maxFiles <= 0 {
		maxFiles = DefaultMaxFiles
	}
	l := &Log{path: path, maxBytes: maxBytes, maxFiles: maxFiles}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Log) open() error {
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit log: %w", err)
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// Record appends e. An entry that cannot be written is an error for the caller to log:
// the request it describes has happened already.
func (l *Log) Record(e Entry) error {
	e.Path, e.Name, e.Who = clip(e.Path), clip(e.Name), clip(e.Who)
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return fmt.Errorf("audit log: closed")
	}
	if l.size+int64(len(b)) > l.maxBytes && l.size > 0 {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	n, err := l.f.Write(b)
	l.size += int64(n)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	return nil
}

// clip shortens a client's string, so every entry stays one bounded, valid JSON line.
func clip(s string) string {
	if len(s) > maxField {
		return s[:maxField] + "…"
	}
	return s
}

// rotate shifts path.N-1 to path.N (dropping the oldest), path to path.1, and starts a new
// file.
func (l *Log) rotate() error {
	l.f.Close()
	l.f = nil
	for i := l.maxFiles - 1; i >= 1; i-- {
		os.Rename(l.path+"."+strconv.Itoa(i), l.path+"."+strconv.Itoa(i+1)) // missing ones are fine
	}
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		return fmt.Errorf("audit log: rotate: %w", err)
	}
	os.Remove(l.path + "." + strconv.Itoa(l.maxFiles+1))
	return l.open()
}

// Close closes the file; later records fail.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
