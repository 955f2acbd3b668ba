package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver/podsandbox"
)

// DefaultNetworkImage is the CNI sandbox image the driver builds when Config.NetworkImage
// is empty: nothing can be pulled, so it is imported from the host's static busybox
// (podsandbox). Its sleep is the entrypoint, so that it also runs as a task (a pod's
// network holder), to which BCS's rules give no image CMD (command.go).
const DefaultNetworkImage = podsandbox.Image

// sandboxImage returns the image for CNI sandboxes, building the default one when it is
// missing. A configured image is used as is (it must be present or pullable).
func (d *Driver) sandboxImage(ctx context.Context) (string, error) {
	if d.networkImage != "" {
		if _, err := d.ensureImage(ctx, &v4.Container{Image: d.networkImage}, nil); err != nil {
			return "", fmt.Errorf("network image: %w", err)
		}
		return d.networkImage, nil
	}
	d.imageMu.Lock()
	defer d.imageMu.Unlock()
	_, err := d.cli.ImageInspect(ctx, DefaultNetworkImage)
	if err == nil {
		return DefaultNetworkImage, nil
	}
	if !cerrdefs.IsNotFound(err) {
		return "", d.wrap(err, "network image %s", DefaultNetworkImage)
	}
	rootfs, err := podsandbox.Rootfs()
	if err != nil {
		return "", fmt.Errorf("build network image %s: %w (or set the network image)", DefaultNetworkImage, err)
	}
	d.log.Info("building the pod sandbox image", "image", DefaultNetworkImage)
	rc, err := d.cli.ImageImport(ctx, client.ImageImportSource{Source: bytes.NewReader(rootfs), SourceName: "-"}, DefaultNetworkImage,
		client.ImageImportOptions{Changes: []string{entrypointChange()}})
	if err != nil {
		return "", d.wrap(err, "build network image %s", DefaultNetworkImage)
	}
	defer rc.Close()
	if err := streamError(rc); err != nil {
		return "", fmt.Errorf("build network image %s: %w", DefaultNetworkImage, err)
	}
	return DefaultNetworkImage, nil
}

// HolderImage is the image of a pod's network holder (driver.NetworkHolders): the CNI
// sandbox's, a static busybox that sleeps.
func (d *Driver) HolderImage(ctx context.Context) (string, error) { return d.sandboxImage(ctx) }

// entrypointChange is podsandbox.Entrypoint as a Dockerfile ENTRYPOINT for the import.
func entrypointChange() string {
	b, _ := json.Marshal(podsandbox.Entrypoint) // a []string always marshals
	return "ENTRYPOINT " + string(b)
}
