package containerd

import (
	"context"
	"fmt"
	"io"
	"time"

	client "github.com/containerd/containerd/v2/client"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

// Import loads images from a tar (`docker save` output or an OCI image layout) into the
// driver's namespace and unpacks them, and returns their names. It is how tests and
// operators get images onto a node that cannot pull.
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

// image returns the task's image, unpacked, present per its pull policy: Always pulls
// at every start, Never never pulls, anything else (IfNotPresent, BCS's rule) pulls
// only an image the namespace lacks. setup gives the credentials (PullAuth, else the
// container's imagePullUser/imagePullPasswd) and where the pull's progress goes.
func (d *Driver) image(ctx context.Context, c *v4.Container, setup *driver.ContainerSetup) (client.Image, error) {
	name, err := normalizeImage(c.Image)
	if err != nil {
		return nil, err
	}
	if c.ImagePullPolicy != v4.PullAlways {
		img, err := d.cli.GetImage(ctx, name)
		switch {
		case err == nil:
			return d.unpacked(ctx, img)
		case !cerrdefs.IsNotFound(err):
			return nil, d.wrap(err, "image %s", name)
		case c.ImagePullPolicy == v4.PullNever:
			return nil, driver.PullFailed(fmt.Errorf("image %s is not on the node, and its imagePullPolicy is Never", c.Image))
		}
	}
	auth := setup.PullAuth
	if auth == nil && (c.ImagePullUser != "" || c.ImagePullPasswd != "") {
		auth = &driver.RegistryAuth{Server: v4.ImageRegistry(c.Image), Username: c.ImagePullUser, Password: c.ImagePullPasswd}
	}
	progress := setup.PullProgress
	if progress == nil {
		progress = func(driver.PullEvent) {}
	}
	began := time.Now()
	progress(driver.PullEvent{Phase: driver.PullStarted, Image: c.Image})
	img, err := d.pullImage(ctx, name, auth, progress)
	if err != nil {
		return nil, err
	}
	size, err := img.Size(ctx)
	if err != nil {
		d.log.Debug("size of a pulled image", "image", name, "err", err)
	}
	progress(driver.PullEvent{Phase: driver.PullDone, Image: c.Image, Size: size, Took: time.Since(began)})
	return img, nil
}

// unpacked unpacks img into the snapshotter unless it is there already (an image
// imported or pulled for another snapshotter).
func (d *Driver) unpacked(ctx context.Context, img client.Image) (client.Image, error) {
	ok, err := img.IsUnpacked(ctx, d.snapshotter)
	if err != nil {
		return nil, d.wrap(err, "image %s", img.Name())
	}
	if !ok {
		if err := img.Unpack(ctx, d.snapshotter); err != nil {
			return nil, d.wrap(err, "unpack image %s", img.Name())
		}
	}
	return img, nil
}
