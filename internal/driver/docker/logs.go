package docker

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/berthhq/berth/internal/driver"
)

// Logs streams the container's output as docker logs does: stdout and stderr
// interleaved, or opts.Stream alone, each line prefixed with its time when
// opts.Timestamps; with Follow it goes on until the container ends or ctx ends (or the
// reader is closed). A container with a tty has one stream, stdout.
func (d *Driver) Logs(ctx context.Context, id string, opts driver.LogOptions) (io.ReadCloser, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	c, err := d.find(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("logs: %w", err)
	}
	tty := c.Config != nil && c.Config.Tty
	if tty && opts.Stream == driver.StreamStderr {
		return io.NopCloser(strings.NewReader("")), nil
	}
	lo := client.ContainerLogsOptions{
		ShowStdout: opts.Stream != driver.StreamStderr, ShowStderr: opts.Stream != driver.StreamStdout,
		Timestamps: opts.Timestamps, Follow: opts.Follow, Tail: "all",
	}
	if opts.Tail > 0 {
		lo.Tail = strconv.Itoa(opts.Tail)
	}
	rc, err := d.cli.ContainerLogs(ctx, c.ID, lo)
	if err != nil {
		return nil, d.wrap(err, "logs of task %s", id)
	}
	if tty {
		return rc, nil // a tty's output is one raw stream
	}
	// Docker frames each chunk with its stream; the copier strips the frames. It ends
	// when the source ends or the reader is closed (which closes the source too).
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, pw, rc)
		rc.Close()
		pw.CloseWithError(err)
	}()
	return &demuxReader{PipeReader: pr, src: rc}, nil
}

// demuxReader is the reading end of the demultiplexed logs; Close stops the copier.
type demuxReader struct {
	*io.PipeReader
	src io.Closer
}

func (r *demuxReader) Close() error {
	r.src.Close()
	return r.PipeReader.Close()
}
