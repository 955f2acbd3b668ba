// Package crilog writes and reads task logs in the CRI log format, the format of
// containerd's shim, CRI-O's conmon and the kubelet: one record per line,
//
//	<RFC3339Nano UTC time> <stdout|stderr> <F|P> <text>\n
//
// where P marks a partial record (a chunk that did not end in a newline yet, or a piece
// of a line longer than MaxRecord) and F the record that ends a line. Keeping the stream
// and the time of each line is what lets the reader show stdout or stderr alone, or both
// in the order they were written, with timestamps.
package crilog

import (
	"bytes"
	"io"
	"sync"
	"time"
)

// Format is the name a task's state records for a log written in this format.
const Format = "cri"

// The streams a record may name.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// MaxRecord is the most text one record holds: a longer line is split into partial
// records, so a reader never needs more than this (and the header) for one.
const MaxRecord = 16 << 10

// Writer frames what its streams write into records on one destination. One mutex makes
// every Write of a stream land as whole records, never interleaved with another's.
type Writer struct {
	mu  sync.Mutex
	dst io.Writer
	buf []byte
	// now is the clock (time.Now; tests set another).
	now func() time.Time
}

// NewWriter returns a Writer on dst.
func NewWriter(dst io.Writer) *Writer {
	return &Writer{dst: dst, now: time.Now}
}

// Stream returns the writer of one stream (Stdout or Stderr).
func (w *Writer) Stream(name string) io.Writer {
	return streamWriter{w: w, name: name}
}

type streamWriter struct {
	w    *Writer
	name string
}

// Write frames p as records: an F record for each line it ends, a P record for what
// follows its last newline, and P records for the pieces of a line longer than MaxRecord.
// It reports all of p written once the records are written.
func (s streamWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	stamp := w.now().UTC().Format(time.RFC3339Nano)
	w.buf = w.buf[:0]
	for rest := p; len(rest) > 0; {
		line, tag := rest, byte('P')
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, tag = rest[:i], 'F'
		}
		if len(line) > MaxRecord {
			line, tag = line[:MaxRecord], 'P'
		}
		rest = rest[len(line):]
		if tag == 'F' {
			rest = rest[1:] // the newline the record stands for
		}
		w.buf = append(w.buf, stamp...)
		w.buf = append(w.buf, ' ')
		w.buf = append(w.buf, s.name...)
		w.buf = append(w.buf, ' ', tag, ' ')
		w.buf = append(w.buf, line...)
		w.buf = append(w.buf, '\n')
	}
	if _, err := w.dst.Write(w.buf); err != nil {
		return 0, err
	}
	if cap(w.buf) > 4*MaxRecord {
		w.buf = nil // one huge write does not pin its buffer for the writer's life
	}
	return len(p), nil
}
