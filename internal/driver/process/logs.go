package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/berthhq/berth/internal/crilog"
	"github.com/berthhq/berth/internal/driver"
)

// Logs returns the task's output (its stdout and stderr, and the output of stopCmd,
// reloadCmd and restartCmd) as text: both streams in the order they were written, or
// opts.Stream alone; each line prefixed with its time when opts.Timestamps; from the
// start, or its last Tail lines (of the streams selected); with Follow the reader keeps
// returning what is appended until ctx ends or it is closed, then EOF. The raw log of a
// task an older agent started is all stdout, without times.
func (d *Driver) Logs(ctx context.Context, id string, opts driver.LogOptions) (io.ReadCloser, error) {
	st, err := d.snapshot(id)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(st.LogPath)
	if errors.Is(err, os.ErrNotExist) && opts.Follow {
		// Nothing written yet: follow from an empty file.
		if f2, _, err2 := openLog(st.LogPath); err2 == nil {
			f2.Close()
			f, err = os.Open(st.LogPath)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("task %s: logs: %w", id, err)
	}
	ropts := crilog.Options{Stream: opts.Stream, Timestamps: opts.Timestamps}
	if err := seekTail(f, st.LogFormat, opts.Tail, ropts); err != nil {
		f.Close()
		return nil, fmt.Errorf("task %s: logs: %w", id, err)
	}
	var src io.ReadCloser = f
	if opts.Follow {
		src = &follower{f: f, ctx: ctx, closed: make(chan struct{})}
	}
	if st.LogFormat != crilog.Format {
		if opts.Stream == crilog.Stderr {
			src.Close()
			return io.NopCloser(strings.NewReader("")), nil // a raw log is all stdout
		}
		return src, nil
	}
	return readCloser{Reader: crilog.NewReader(src, ropts), Closer: src}, nil
}

// seekTail moves f to where its last n lines begin (n <= 0: the start).
func seekTail(f *os.File, format string, n int, opts crilog.Options) error {
	if n <= 0 {
		return nil
	}
	var off int64
	var err error
	if format == crilog.Format {
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil {
			off, err = crilog.TailOffset(f, fi.Size(), n, opts)
		}
	} else {
		off, err = tailOffset(f, n)
	}
	if err == nil {
		_, err = f.Seek(off, io.SeekStart)
	}
	return err
}

// readCloser reads the decoded records and closes their source.
type readCloser struct {
	io.Reader
	io.Closer
}

// logWriters returns where a command run for the task (stopCmd, reloadCmd, restartCmd)
// writes its stdout and stderr in the task's log f: as records of those streams, or the
// file itself for a raw log.
func (st *taskState) logWriters(f *os.File) (stdout, stderr io.Writer) {
	if st.LogFormat != crilog.Format {
		return f, f
	}
	w := crilog.NewWriter(f)
	return w.Stream(crilog.Stdout), w.Stream(crilog.Stderr)
}

// tailOffset finds where the last n lines of f begin, reading backwards in blocks. A
// final line without a newline counts as a line.
func tailOffset(f *os.File, n int) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	const block = 8192
	buf := make([]byte, block)
	pos := size
	newlines := 0
	// A trailing newline ends the last line; it does not start another one.
	if size > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, size-1); err != nil {
			return 0, err
		}
		if last[0] == '\n' {
			pos = size - 1
		}
	}
	for pos > 0 {
		start := pos - block
		if start < 0 {
			start = 0
		}
		chunk := buf[:pos-start]
		if _, err := f.ReadAt(chunk, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] == '\n' {
				newlines++
				if newlines == n {
					return start + int64(i) + 1, nil
				}
			}
		}
		pos = start
	}
	return 0, nil
}

// follower reads a growing file until its context ends or it is closed. Read polls the
// file rather than watching it: one goroutine fewer, and the caller's Read owns the wait.
type follower struct {
	f      *os.File
	ctx    context.Context
	once   sync.Once
	closed chan struct{}
}

func (r *follower) Read(p []byte) (int, error) {
	for {
		select {
		case <-r.closed:
			return 0, io.EOF
		default:
		}
		n, err := r.f.Read(p)
		if n > 0 {
			return n, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		select {
		case <-r.ctx.Done():
			return 0, io.EOF
		case <-r.closed:
			return 0, io.EOF
		case <-time.After(pollInterval * 4):
		}
	}
}

func (r *follower) Close() error {
	r.once.Do(func() { close(r.closed) })
	return r.f.Close()
}

// logTail returns, for error messages, the last max bytes of text the log got after
// offset (records read as text), on one line.
func logTail(path string, offset int64, max int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() <= offset {
		return ""
	}
	// Records carry a header of some 40 bytes a line: read enough of them for max bytes
	// of short lines.
	start := offset
	if fi.Size()-start > 8*max {
		start = fi.Size() - 8*max
	}
	b := make([]byte, fi.Size()-start)
	if _, err := f.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	if start > offset {
		// Cut inside a line: drop its end, which is no record.
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	b = crilog.Text(b)
	if int64(len(b)) > max {
		b = b[int64(len(b))-max:]
	}
	b = bytes.TrimSpace(b)
	return strings.Join(strings.Fields(strings.ReplaceAll(string(b), "\n", " | ")), " ")
}
