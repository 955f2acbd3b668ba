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

	"github.com/berthhq/berth/internal/driver"
)

// Logs returns the task's log file (its stdout and stderr, and the output of stopCmd,
// reloadCmd and restartCmd): from the start, or its last Tail lines; with Follow the
// reader keeps returning what is appended until ctx ends or it is closed, then EOF.
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
	if opts.Tail > 0 {
		off, err := tailOffset(f, opts.Tail)
		if err == nil {
			_, err = f.Seek(off, io.SeekStart)
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("task %s: logs: %w", id, err)
		}
	}
	if !opts.Follow {
		return f, nil
	}
	return &follower{f: f, ctx: ctx, closed: make(chan struct{})}, nil
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

// logTail returns the last max bytes the log got after offset, on one line, for error
// messages.
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
	start := offset
	if fi.Size()-start > max {
		start = fi.Size() - max
	}
	b := make([]byte, fi.Size()-start)
	if _, err := f.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	b = bytes.TrimSpace(b)
	return strings.Join(strings.Fields(strings.ReplaceAll(string(b), "\n", " | ")), " ")
}
