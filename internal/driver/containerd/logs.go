package containerd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/berthhq/berth/internal/crilog"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/logfile"
)

// followPoll is how often a followed log is looked at for what was appended.
const followPoll = 200 * time.Millisecond

// Logs returns the task's output as text, from the CRI log its logger writes (the
// process driver's format): both streams in the order they were written, or opts.Stream
// alone; with times when opts.Timestamps; the last Tail lines; with Follow the reader
// keeps returning what is appended, across rotations, until ctx ends or it is closed.
func (d *Driver) Logs(ctx context.Context, id string, opts driver.LogOptions) (io.ReadCloser, error) {
	dctx := d.ctx(ctx)
	c, err := d.load(dctx, id)
	if err != nil {
		return nil, fmt.Errorf("logs: %w", err)
	}
	labels, err := c.Labels(dctx)
	if err != nil {
		return nil, d.wrap(err, "logs of task %s", id)
	}
	path := labels[labelLog]
	maxFiles, _ := strconv.Atoi(labels[labelLogFiles])
	maxFiles = min(max(maxFiles, 1), logfile.MaxMaxFiles)
	if path == "" {
		return nil, fmt.Errorf("logs of task %s: the container has no log", id)
	}
	files, err := logfile.Open(path, maxFiles)
	if errors.Is(err, os.ErrNotExist) {
		// Nothing written yet (the logger opens it as the task starts).
		return io.NopCloser(emptyReader{}), nil
	}
	if err != nil {
		return nil, fmt.Errorf("logs of task %s: %w", id, err)
	}
	ropts := crilog.Options{Stream: opts.Stream, Timestamps: opts.Timestamps}
	if files, err = seekTail(files, opts.Tail, ropts); err != nil {
		return nil, fmt.Errorf("logs of task %s: %w", id, err)
	}
	var src io.ReadCloser = newFileChain(files)
	if opts.Follow {
		src = logfile.NewFollower(ctx, path, maxFiles, files, followPoll)
	}
	return readCloser{Reader: crilog.NewReader(src, ropts), Closer: src}, nil
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, io.EOF }

type readCloser struct {
	io.Reader
	io.Closer
}

// seekTail returns the files (oldest first) that hold the last n lines of the selected
// streams, the first one moved to where they begin (n <= 0: all of them); it closes the
// others.
func seekTail(files []*os.File, n int, opts crilog.Options) ([]*os.File, error) {
	if n <= 0 {
		return files, nil
	}
	for i := len(files) - 1; i >= 0; i-- {
		fi, err := files[i].Stat()
		var off int64
		var found int
		if err == nil {
			off, found, err = crilog.TailLines(files[i], fi.Size(), n, opts)
		}
		if err == nil && found < n && i > 0 {
			n -= found
			continue
		}
		if err == nil {
			_, err = files[i].Seek(off, io.SeekStart)
		}
		closeFiles(files[:i])
		if err != nil {
			closeFiles(files[i:])
			return nil, err
		}
		return files[i:], nil
	}
	return files, nil
}

// fileChain reads files one after the other and closes them all.
type fileChain struct {
	io.Reader
	files []*os.File
}

func newFileChain(files []*os.File) *fileChain {
	readers := make([]io.Reader, len(files))
	for i, f := range files {
		readers[i] = f
	}
	return &fileChain{Reader: io.MultiReader(readers...), files: files}
}

func (c *fileChain) Close() error {
	closeFiles(c.files)
	return nil
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
