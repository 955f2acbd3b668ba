package containerd

import (
	"context"
	"errors"
	"fmt"
	cerrdefs "github.com/containerd/errdefs"

	client "github.com/containerd/containerd/v2/client"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/podsandbox"
)

// sandboxImage returns the image of pod sandboxes, unpacked, importing the default one
// (podsandbox.Image, from the host's static busybox) when the namespace lacks it. A
// configured image is used as is: it must be in the namespace (the driver does not
// pull).
func (d *Driver) sandboxImage(ctx context.Context) (client.Image, error) {
	if d.networkImage != "" {
		img, err := d.image(ctx, &v4.Container{Image: d.networkImage}, &driver.ContainerSetup{})
		if err != nil {
			return nil, fmt.Errorf("network image: %w", err)
		}
		return img, nil
	}
	d.imageMu.Lock()
	defer d.imageMu.Unlock()
	img, err := d.localImage(ctx, podsandbox.Image)
	if !errors.Is(err, driver.ErrNotFound) {
		return img, err
	}
	if err := d.buildSandboxImage(ctx); err != nil {
		return nil, fmt.Errorf("build network image %s: %w (or set the network image)", podsandbox.Image, err)
	}
	return d.localImage(ctx, podsandbox.Image)
}

// localImage is the namespace's image ref, unpacked; driver.ErrNotFound when missing (it
// is never pulled).
func (d *Driver) localImage(ctx context.Context, ref string) (client.Image, error) {
	name, err := normalizeImage(ref)
	if err != nil {
		return nil, err
	}
	img, err := d.cli.GetImage(ctx, name)
	switch {
	case cerrdefs.IsNotFound(err):
		return nil, fmt.Errorf("image %s: %w", ref, driver.ErrNotFound)
	case err != nil:
		return nil, d.wrap(err, "image %s", name)
	}
	return d.unpacked(ctx, img)
}

// buildSandboxImage imports podsandbox.Image into the namespace as an OCI archive.
func (d *Driver) buildSandboxImage(ctx context.Context) error {
	name, err := normalizeImage(podsandbox.Image)
	if err != nil {
		return err
	}
	rootfs, err := podsandbox.Rootfs()
	if err != nil {
		return err
	}
	archive, err := podsandbox.OCIArchive(name, rootfs, podsandbox.Entrypoint)
	if err != nil {
		return err
	}
	d.log.Info("building the pod sandbox image", "image", name)
	_, err = d.Import(ctx, archive)
	return err
}

// HolderImage is the image of a pod's network holder (driver.NetworkHolders): the
// sandbox's, a static busybox that sleeps, imported when missing.
func (d *Driver) HolderImage(ctx context.Context) (string, error) {
	if _, err := d.sandboxImage(d.ctx(ctx)); err != nil {
		return "", err
	}
	if d.networkImage != "" {
		return d.networkImage, nil
	}
	return podsandbox.Image, nil
}
