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
	var src io.ReadCloser = logfile.Chain(files)
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
	return logfile.SeekTail(files, n, func(f *os.File, n int) (int64, int, error) {
		fi, err := f.Stat()
		if err != nil {
			return 0, 0, err
		}
		return crilog.TailLines(f, fi.Size(), n, opts)
	})
}
