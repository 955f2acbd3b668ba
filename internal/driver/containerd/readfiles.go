package containerd

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/containerd/containerd/v2/core/mount"

	"github.com/berthhq/berth/internal/stepio"
)

// ReadFiles implements driver.FileReader: the container's snapshot (its root file
// system as the task left it; not its volumes) is mounted read-only in a temporary
// directory and path is read through an os.Root of it, so a link the task made cannot
// lead the agent out of it (an absolute link fails instead of reaching the node). The
// archive is written as it is read, by a goroutine that ends with the reader's Close or
// the read's end.
func (d *Driver) ReadFiles(ctx context.Context, id, path string) (io.ReadCloser, error) {
	ctx = d.ctx(ctx)
	c, err := d.load(ctx, id)
	if err != nil {
		return nil, err
	}
	info, err := c.Info(ctx)
	if err != nil {
		return nil, d.wrap(err, "task %s", id)
	}
	mounts, err := d.cli.SnapshotService(info.Snapshotter).Mounts(ctx, info.SnapshotKey)
	if err != nil {
		return nil, d.wrap(err, "task %s: snapshot", id)
	}
	pr, pw := io.Pipe()
	go func() {
		err := mount.WithReadonlyTempMount(ctx, mounts, func(dir string) error {
			root, err := os.OpenRoot(dir)
			if err != nil {
				return err
			}
			defer root.Close()
			tw := tar.NewWriter(pw)
			err = stepio.RootSource{Root: root}.Walk(ctx, path, func(h *tar.Header, r io.Reader) error {
				if err := tw.WriteHeader(h); err != nil {
					return err
				}
				if r != nil {
					_, err := io.Copy(tw, r)
					return err
				}
				return nil
			})
			if err != nil {
				return err
			}
			return tw.Close()
		})
		if err != nil {
			err = fmt.Errorf("read %s of task %s: %w", path, id, err)
		}
		pw.CloseWithError(err)
	}()
	return pr, nil
}
