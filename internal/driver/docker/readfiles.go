package docker

import (
	"context"
	"fmt"
	"io"
	"io/fs"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// ReadFiles implements driver.FileReader with the Engine API's archive route (docker
// cp), which resolves path inside the container's filesystem, so a link the task made
// (/out -> /etc/shadow) names the container's file, never the node's.
func (d *Driver) ReadFiles(ctx context.Context, id, path string) (io.ReadCloser, error) {
	c, err := d.find(ctx, id)
	if err != nil {
		return nil, err
	}
	res, err := d.cli.CopyFromContainer(ctx, c.ID, client.CopyFromContainerOptions{SourcePath: path})
	if cerrdefs.IsNotFound(err) {
		return nil, fmt.Errorf("%s in task %s: %w", path, id, fs.ErrNotExist)
	}
	if err != nil {
		return nil, d.wrap(err, "read %s of task %s", path, id)
	}
	return res.Content, nil
}
