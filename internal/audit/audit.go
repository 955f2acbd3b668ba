// Package audit appends one JSON line per audited request to a file (docs/security.md,
// Audit log): who, what, which object, and the result. The file is rotated by size and a
// bounded number of old files is kept, so the log cannot fill the disk.
package audit

import (
	"encoding/json"
	"errors"
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
	// Command is an exec session's command line, argument by argument.
	Command []string `json:"command,omitempty"`
	Method  string   `json:"method,omitempty"`
	Path    string   `json:"path,omitempty"`
	// Via is the request of another front door (BCS's, deployd's API: method and path)
	// that made this /v1 call.
	Via string `json:"via,omitempty"`
	// Status is the HTTP status of the answer: 401 and 403 are refusals, 429 a source
	// slowed down for its failed authentications.
	Status int    `json:"status"`
	Remote string `json:"remote,omitempty"`
	// Count, Throttled and Tokens sum up the failed authentications of one source in one
	// minute (AuthFailure): how many, how many of them were refused unchecked (429), and
	// the token IDs they claimed (a few, never a secret).
	Count     int      `json:"count,omitempty"`
	Throttled int      `json:"throttled,omitempty"`
	Tokens    []string `json:"tokens,omitempty"`
}

// Defaults of Config.
const (
	DefaultMaxBytes = 100 << 20
	DefaultMaxFiles = 5
	// maxField bounds what of a request's path and name an entry keeps: they come from
	// clients.
	maxField = 1024
	// maxList bounds how many strings of a list (a command's arguments) an entry keeps.
	maxList = 64
)

// Log is an audit log file. Its methods are safe for concurrent use.
type Log struct {
	path     string
	maxBytes int64
	maxFiles int

	mu   sync.Mutex
	f    *os.File
	size int64

	// failures sums up failed authentications by source and minute (failures.go).
	failures failureWindow
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
	b, err := encode(e)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writeLocked(b)
}

// recordLocked is Record with l.mu held.
func (l *Log) recordLocked(e Entry) error {
	b, err := encode(e)
	if err != nil {
		return err
	}
	return l.writeLocked(b)
}

// encode is e's line, its client strings bounded.
func encode(e Entry) ([]byte, error) {
	e.Path, e.Name, e.Who, e.Via = clip(e.Path), clip(e.Name), clip(e.Who), clip(e.Via)
	e.Command = clipList(e.Command)
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	return append(b, '\n'), nil
}

// writeLocked appends line b, rotating first when the file would grow past its limit
// (l.mu held).
func (l *Log) writeLocked(b []byte) error {
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

// clipList bounds a client's list of strings, and each of them.
func clipList(list []string) []string {
	if list == nil {
		return nil
	}
	out := make([]string, 0, min(len(list), maxList+1))
	for i, s := range list {
		if i == maxList {
			out = append(out, fmt.Sprintf("… (%d more)", len(list)-maxList))
			break
		}
		out = append(out, clip(s))
	}
	return out
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

// Close writes the failed authentications summed up so far, then closes the file; later
// records fail.
func (l *Log) Close() error {
	flushErr := l.stopFailures()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return errors.Join(flushErr, err)
}
