// Package logfile keeps a task's log file within bounds, as the kubelet
// (containerLogMaxSize, containerLogMaxFiles) and Nomad (logs { max_file_size,
// max_files }) do: the live file X.log is renamed X.log.1 when the next write would make
// it pass its size limit (X.log.1 becoming X.log.2, and so on, the oldest dropped), and a
// new X.log is started. Writes are whole lines (records of package crilog): a rotation
// falls between two of them, never inside one. Readers open the set oldest first (Open)
// and follow the live file across rotations (Follower).
package logfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// Defaults and bounds of the limits (the kubelet's defaults).
const (
	DefaultMaxBytes = 10 << 20
	DefaultMaxFiles = 5
	// MinMaxBytes leaves room for a few whole records (a record holds at most 16 KiB of
	// text, crilog.MaxRecord), so a file never has to hold less than one.
	MinMaxBytes = 64 << 10
	// MaxMaxFiles bounds the files a reader opens at once.
	MaxMaxFiles = 100
)

// Limits bound a log: MaxBytes per file and MaxFiles files in all, the live one and
// MaxFiles-1 rotated ones, so at most MaxBytes x MaxFiles on disk. The zero Limits is no
// rotation (a task an older agent started).
type Limits struct {
	MaxBytes int64 `json:"maxBytes,omitempty"`
	MaxFiles int   `json:"maxFiles,omitempty"`
}

// Check reports limits out of bounds; the error names the limit as the agent's flag.
func (l Limits) Check() error {
	if l.MaxBytes < MinMaxBytes {
		return fmt.Errorf("--log-max-size %d: must be at least %d bytes (64KiB)", l.MaxBytes, MinMaxBytes)
	}
	if l.MaxFiles < 2 || l.MaxFiles > MaxMaxFiles {
		return fmt.Errorf("--log-max-files %d: must be between 2 and %d", l.MaxFiles, MaxMaxFiles)
	}
	return nil
}

// Rotates reports whether the limits rotate the log (they are set).
func (l Limits) Rotates() bool { return l.MaxBytes > 0 && l.MaxFiles > 1 }

// Rotated returns the name of the i-th rotated file of the log at path (i >= 1, 1 the
// newest).
func Rotated(path string, i int) string { return path + "." + strconv.Itoa(i) }

// Rotator is a log's writer that rotates it. Each Write must be whole lines (it may be
// many): what does not fit in the live file goes into the next one, cut after a line.
// The live file's size is read from the file itself at each write, so what another
// writer appended to it (the driver's stopCmd output) counts too.
type Rotator struct {
	mu   sync.Mutex
	path string
	lim  Limits
	f    *os.File
	// prepare gives a new live file its owner and mode.
	prepare func(*os.File) error
	// swapped, when set, is told of each new live file (the shim points its own
	// descriptors 1 and 2 at it, so the rotated file is not held open).
	swapped func(*os.File)
}

// NewRotator returns a Rotator of the log at path whose live file f is open for
// appending; it owns f. prepare (nil: nothing) sets a new live file's owner and mode;
// swapped (nil: nothing) is called with each new live file.
func NewRotator(f *os.File, path string, lim Limits, prepare func(*os.File) error, swapped func(*os.File)) *Rotator {
	return &Rotator{path: path, lim: lim, f: f, prepare: prepare, swapped: swapped}
}

// Write writes p, whole lines, rotating the log first whenever the next line would make
// the live file pass MaxBytes. A line longer than MaxBytes fills a file of its own.
// When a rotation fails (the directory is gone or full), the rest of p is dropped and the
// next write tries again: the log stays within its bounds, and the task is not stopped
// by a write error on its output.
func (r *Rotator) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	total := len(p)
	for len(p) > 0 {
		var size int64
		if fi, err := r.f.Stat(); err == nil {
			size = fi.Size()
		}
		room := r.lim.MaxBytes - size
		chunk := p
		if int64(len(p)) > room {
			cut := 0
			if room > 0 {
				cut = bytes.LastIndexByte(p[:room], '\n') + 1
			}
			if cut == 0 && size > 0 {
				if err := r.rotate(); err != nil {
					return total, nil
				}
				continue
			}
			if cut == 0 { // one line longer than a whole file
				if cut = bytes.IndexByte(p, '\n') + 1; cut == 0 {
					cut = len(p)
				}
			}
			chunk = p[:cut]
		}
		n, err := r.f.Write(chunk)
		if err != nil {
			return total - len(p) + n, err
		}
		p = p[n:]
	}
	return total, nil
}

// rotate shifts the rotated files up by one (dropping the oldest), renames the live file
// X.log.1 and opens a new live file.
func (r *Rotator) rotate() error {
	for i := r.lim.MaxFiles - 1; i >= 2; i-- {
		if err := os.Rename(Rotated(r.path, i-1), Rotated(r.path, i)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := os.Rename(r.path, Rotated(r.path, 1)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	// O_NOFOLLOW: a link put in the file's place is not followed (the directory is the
	// agent's, but a root process never writes through a name it did not check).
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o640)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o640); err != nil { // the umask may have taken bits off
		f.Close()
		return err
	}
	if r.prepare != nil {
		if err := r.prepare(f); err != nil {
			f.Close()
			return err
		}
	}
	r.f.Close()
	r.f = f
	if r.swapped != nil {
		r.swapped(f)
	}
	return nil
}

// Close closes the live file.
func (r *Rotator) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.f.Close()
}
