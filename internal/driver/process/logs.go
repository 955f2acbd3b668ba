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

	"github.com/berthhq/berth/internal/crilog"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/logfile"
)

// Logs returns the task's output (its stdout and stderr, and the output of stopCmd,
// reloadCmd and restartCmd) as text: both streams in the order they were written, or
// opts.Stream alone; each line prefixed with its time when opts.Timestamps; from the
// start of the oldest rotated file, or its last Tail lines (of the streams selected, from
// as many files as they take); with Follow the reader keeps returning what is appended,
// across rotations, until ctx ends or it is closed, then EOF. The raw log of a task an
// older agent started is all stdout, without times, in one file.
func (d *Driver) Logs(ctx context.Context, id string, opts driver.LogOptions) (io.ReadCloser, error) {
	st, err := d.snapshot(id)
	if err != nil {
		return nil, err
	}
	maxFiles := max(st.LogLimits.MaxFiles, 1)
	files, err := logfile.Open(st.LogPath, maxFiles)
	if errors.Is(err, os.ErrNotExist) && opts.Follow {
		// Nothing written yet: follow from an empty file.
		if f, _, err2 := openLog(st.LogPath); err2 == nil {
			f.Close()
			files, err = logfile.Open(st.LogPath, maxFiles)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("task %s: logs: %w", id, err)
	}
	ropts := crilog.Options{Stream: opts.Stream, Timestamps: opts.Timestamps}
	if files, err = seekTail(files, st.LogFormat, opts.Tail, ropts); err != nil {
		return nil, fmt.Errorf("task %s: logs: %w", id, err)
	}
	var src io.ReadCloser = logfile.Chain(files)
	if opts.Follow {
		src = logfile.NewFollower(ctx, st.LogPath, maxFiles, files, pollInterval*4)
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

// seekTail returns the files (oldest first) that hold the last n lines, the first one
// moved to where they begin (n <= 0: all of them, from the start); it closes the others.
// A line begun in an older file (partial records) is returned from where its file cuts
// it.
func seekTail(files []*os.File, format string, n int, opts crilog.Options) ([]*os.File, error) {
	return logfile.SeekTail(files, n, func(f *os.File, n int) (int64, int, error) { return tailIn(f, format, n, opts) })
}

// tailIn returns where the last n lines of one file begin and how many it holds (up to
// n). A raw log (one file) counts as holding them all.
func tailIn(f *os.File, format string, n int, opts crilog.Options) (int64, int, error) {
	if format != crilog.Format {
		off, err := tailOffset(f, n)
		return off, n, err
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	return crilog.TailLines(f, fi.Size(), n, opts)
}

// readCloser reads the decoded records and closes their source.
type readCloser struct {
	io.Reader
	io.Closer
}

// cmdOutputMax bounds what one run of stopCmd, reloadCmd or restartCmd writes into the
// task's log; the rest is dropped. The driver writes beside the shim, which alone rotates
// the log: the shim counts these bytes too (it reads the live file's size), and the
// bound keeps a command that writes on into a file just rotated from growing it.
const cmdOutputMax = 1 << 20

// logWriters returns where a command run for the task (stopCmd, reloadCmd, restartCmd)
// writes its stdout and stderr in the task's log f: as records of those streams, or the
// file itself for a raw log; cmdOutputMax bytes of both together.
func (st *taskState) logWriters(f *os.File) (stdout, stderr io.Writer) {
	b := &outputBudget{left: cmdOutputMax}
	if st.LogFormat != crilog.Format {
		return budgeted{f, b}, budgeted{f, b}
	}
	w := crilog.NewWriter(f)
	return budgeted{w.Stream(crilog.Stdout), b}, budgeted{w.Stream(crilog.Stderr), b}
}

// outputBudget is what a command may still write into the log.
type outputBudget struct {
	mu   sync.Mutex
	left int
}

// budgeted writes into w what the budget allows and drops the rest, reporting it all
// written: a command is not stopped by a broken pipe for writing too much.
type budgeted struct {
	w io.Writer
	b *outputBudget
}

func (w budgeted) Write(p []byte) (int, error) {
	w.b.mu.Lock()
	n := min(len(p), w.b.left)
	w.b.left -= n
	w.b.mu.Unlock()
	if n > 0 {
		if _, err := w.w.Write(p[:n]); err != nil {
			return 0, err
		}
	}
	return len(p), nil
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

// logTail returns, for error messages, the last max bytes of text the log got after
// offset (records read as text), on one line.
func logTail(path string, offset int64, max int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	if fi.Size() < offset {
		offset = 0 // the log was rotated since: what this run wrote begins this file
	}
	if fi.Size() == offset {
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
