package containerd

import (
	"context"
	"fmt"
	"io"

	client "github.com/containerd/containerd/v2/client"
	"github.com/distribution/reference"

	v4 "github.com/berthhq/berth/api/v4"
)

// Import loads images from a tar (`docker save` output or an OCI image layout) into the
// driver's namespace and unpacks them, and returns their names. It is how tests and
// operators get images onto a node that cannot pull (pulls come later).
func (d *Driver) Import(ctx context.Context, r io.Reader) ([]string, error) {
	ctx = d.ctx(ctx)
	imgs, err := d.cli.Import(ctx, r)
	if err != nil {
		return nil, d.wrap(err, "import images")
	}
	var names []string
	for _, m := range imgs {
		img := client.NewImage(d.cli, m)
		if err := img.Unpack(ctx, d.snapshotter); err != nil {
			return names, d.wrap(err, "unpack image %s", m.Name)
		}
		names = append(names, m.Name)
	}
	return names, nil
}

// normalizeImage is the name containerd knows an image by: docker.io/library/busybox:latest
// for busybox, as Docker resolves it.
func normalizeImage(name string) (string, error) {
	ref, err := reference.ParseNormalizedNamed(name)
	if err != nil {
		return "", fmt.Errorf("image %q: %w", name, err)
	}
	return reference.TagNameOnly(ref).String(), nil
}

// image returns the task's image, unpacked. The image must be in the namespace already
// (Import): the driver does not pull yet, so a pull policy of Always is refused rather
// than silently run an older image.
func (d *Driver) image(ctx context.Context, c *v4.Container) (client.Image, error) {
	name, err := normalizeImage(c.Image)
	if err != nil {
		return nil, err
	}
	if c.ImagePullPolicy == v4.PullAlways {
		return nil, fmt.Errorf("image %s: imagePullPolicy Always: the containerd driver cannot pull images yet", c.Image)
	}
	img, err := d.cli.GetImage(ctx, name)
	if err != nil {
		return nil, d.wrap(err, "image %s (the containerd driver does not pull: import it)", name)
	}
	ok, err := img.IsUnpacked(ctx, d.snapshotter)
	if err != nil {
		return nil, d.wrap(err, "image %s", name)
	}
	if !ok {
		if err := img.Unpack(ctx, d.snapshotter); err != nil {
			return nil, d.wrap(err, "unpack image %s", name)
		}
	}
	return img, nil
}
