package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/authconfig"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"

	v4 "github.com/berthhq/berth/api/v4"
)

// ensureImage makes the container's image present per its pull policy (Always pulls,
// anything else pulls only a missing image, as BCS's ForcePullImage) and returns its
// inspection, whose entrypoint decides the command line.
func (d *Driver) ensureImage(ctx context.Context, c *v4.Container) (image.InspectResponse, error) {
	if c.Image == "" {
		return image.InspectResponse{}, errors.New("the container has no image")
	}
	if c.ImagePullPolicy != v4.PullAlways {
		img, err := d.cli.ImageInspect(ctx, c.Image)
		if err == nil {
			return img.InspectResponse, nil
		}
		if !cerrdefs.IsNotFound(err) {
			return img.InspectResponse, d.wrap(err, "image %s", c.Image)
		}
	}
	if err := d.pull(ctx, c.Image, c.ImagePullUser, c.ImagePullPasswd); err != nil {
		return image.InspectResponse{}, err
	}
	img, err := d.cli.ImageInspect(ctx, c.Image)
	if err != nil {
		return img.InspectResponse, d.wrap(err, "image %s after pulling it", c.Image)
	}
	return img.InspectResponse, nil
}

// pull pulls one image, with credentials when given. The daemon reports most failures
// inside the progress stream, so the stream is read to its end for an error.
func (d *Driver) pull(ctx context.Context, ref, user, passwd string) error {
	var opts client.ImagePullOptions
	if user != "" || passwd != "" {
		auth, err := authconfig.Encode(registry.AuthConfig{Username: user, Password: passwd})
		if err != nil {
			return fmt.Errorf("pull image %s: credentials: %w", ref, err)
		}
		opts.RegistryAuth = auth
	}
	d.log.Info("pulling image", "image", ref, "authenticated", opts.RegistryAuth != "")
	rc, err := d.cli.ImagePull(ctx, ref, opts)
	if err != nil {
		return d.wrap(err, "pull image %s", ref)
	}
	defer rc.Close()
	if err := streamError(rc); err != nil {
		return fmt.Errorf("pull image %s: %w", ref, err)
	}
	return nil
}

// streamError reads a daemon's JSON progress stream (pull, import, build) and returns
// the first error it reports.
func streamError(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m struct {
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading the daemon's progress: %w", err)
		}
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			return errors.New(m.ErrorDetail.Message)
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
	}
}
